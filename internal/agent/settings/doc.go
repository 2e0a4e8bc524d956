// Package settings serves kubox.agent.v1.SettingsService for kubox-agent: it takes one claim's
// environment variables and files into a sandbox that is already running, a warm pool member
// just bound to the claim, so the claim gets them without a new Pod.
//
// The Store holds the settings of at most one claim, for the agent's lifetime: the environment
// the agent's processes start from (process.Options.Environ reads it at each start, so
// ProcessService, sandboxd's ProcessService, python-runtime's /execute and terminals all see it;
// the main command, started before, does not), and the files, written through the agent's file
// root. kubox-controller calls ApplySettings until it succeeds, and only then reports the claim
// Ready, so a repeated request is answered as the first; a request for another claim is refused,
// because the sandbox holds the first claim's secrets. The settings live in the agent's memory and
// the container's file system: a new Pod (a resumed sandbox) starts without them, and the
// controller applies them again.
package settings
