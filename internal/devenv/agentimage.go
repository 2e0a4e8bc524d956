package devenv

// AgentImage is the image holding kubox-agent, which the controller copies into sandboxes that
// ask for it (spec.agent).
const AgentImage = "kubox.local/kubox-agent:dev"

// AgentSpec is kubox.local/kubox-agent:dev: the static agent binary alone, at /kubox-agent.
func AgentSpec(agent []byte) ImageSpec {
	return ImageSpec{Tag: AgentImage, Files: []ImageFile{{Path: "kubox-agent", Mode: 0o755, Data: agent}},
		Entrypoint: []string{"/kubox-agent"}}
}

// BuildAgentImage builds cmd/kubox-agent from the checkout (static, CGO off) and writes its
// image into cacheDir, keyed by the binary's hash: an unchanged agent reuses its tarball, a
// changed one gets a new tarball, so `up` always runs the checkout's agent.
func BuildAgentImage(repoDir, cacheDir string) (string, error) {
	return buildGoImage(repoDir, cacheDir, "kubox-agent", "", AgentSpec)
}
