// Package activity tells kubox-controller whether a sandbox with an idle policy is still in use,
// and lets kubox-agent stop writing cleanly when its Pod is deleted at a suspend.
//
// A Tracker wraps every port the agent serves and remembers when the last request ended and how
// many are open; the probe paths and ActivityService itself are not activity (the controller's
// check must not keep the sandbox awake). Processes scans /proc for what still runs in the
// container besides the agent and the main command's tree: a build or a server started through
// any of the agent's APIs, including daemons the agent inherited as a subreaper. Service serves
// both as kubox.agent.v1.ActivityService.
//
// Writes is the gate every file-writing API passes: from Suspend on it refuses new writes with a
// message saying the sandbox is suspending, and it lets the writes already admitted finish, so
// the agent can sync the file systems knowing no write is half done.
package activity
