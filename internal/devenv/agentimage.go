package devenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

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
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cacheDir, "agent-build-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	bin := filepath.Join(tmp, "kubox-agent")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/kubox-agent")
	cmd.Dir = repoDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/kubox-agent: %v: %s", err, firstLines(string(out), 5))
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(imageFormat+"\x00"), data...))
	path := filepath.Join(cacheDir, "kubox-agent-"+hex.EncodeToString(sum[:8])+".tar")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	return path, WriteImage(AgentSpec(data), path)
}
