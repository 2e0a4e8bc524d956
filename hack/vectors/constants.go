package main

import (
	"github.com/kubox-dev/kubox/api/contract"
	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	sandboxv1beta1 "github.com/kubox-dev/kubox/api/v1beta1"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// exampleSandbox is the sandbox name of the name-derivation vectors.
const exampleSandbox = "python-x7k2q"

// constants are the keys, names and ports that the Python and TypeScript SDKs write out, each
// taken from its home in api/ (or the Go SDK, for the SDKs' own conventions).
func constants() map[string]any {
	return map[string]any{
		"sandboxGroup":    sandboxv1beta1.GroupVersion.Group,
		"extensionsGroup": extv1beta1.GroupVersion.Group,
		"version":         sandboxv1beta1.GroupVersion.Version,

		"createdByLabel":                   sandboxv1beta1.CreatedByLabel,
		"createdByPython":                  extv1beta1.CreatedByPythonClient,
		"createdByTypeScript":              extv1beta1.CreatedByTypeScriptClient,
		"clientFirstRequestedAtAnnotation": extv1beta1.ClientFirstRequestedAtAnnotation,
		"forkOfLabel":                      sandboxv1beta1.ForkOfLabel,
		"claimGenerateName":                kubox.ClaimGenerateName,

		"agentTokenSecretKey": sandboxv1beta1.AgentTokenSecretKey,
		"agentSecretName": map[string]string{
			"sandbox": exampleSandbox, "secret": sandboxv1beta1.AgentSecretName(exampleSandbox),
		},

		"defaultRouterPort":         contract.DefaultRouterPort,
		"defaultRouterNamespace":    contract.DefaultRouterNamespace,
		"defaultRouterService":      contract.DefaultRouterService,
		"routerURLEnv":              contract.RouterURLEnv,
		"routerKubeconfigExtension": contract.RouterKubeconfigExtension,
		"defaultAgentPort":          contract.DefaultAgentPort,
		"authorizationHeader":       contract.AuthorizationHeader,
		"bearerScheme":              contract.BearerScheme,

		"defaultCodeOutputBytes": kubox.DefaultCodeOutputBytes,
		"defaultCodeResultBytes": kubox.DefaultCodeResultBytes,
	}
}

func claimTerminalReasons() []string   { return extv1beta1.ClaimTerminalReasons() }
func sandboxTerminalReasons() []string { return sandboxv1beta1.SandboxTerminalReasons() }
