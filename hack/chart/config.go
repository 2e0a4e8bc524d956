package main

import (
	"bytes"
	"fmt"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// controllerConfig is config/'s ControllerConfiguration split the way the chart holds it: the
// agent's image goes to values.yaml's agent.image (next to the other images), apiVersion and kind
// stay in the template, and the rest is values.yaml's controller.config, comments kept.
type controllerConfig struct {
	APIVersion string
	Kind       string
	Agent      image
	// TokenKeyFile is agent.tokenKeyFile: where the controller reads the key Secret.
	TokenKeyFile string
	// Settings is the YAML of every other field, as config/ writes it (with its comments).
	Settings string
}

func parseControllerConfig(text string) (controllerConfig, error) {
	var flat struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Agent      struct {
			Image           string `json:"image"`
			ImagePullPolicy string `json:"imagePullPolicy"`
			TokenKeyFile    string `json:"tokenKeyFile"`
		} `json:"agent"`
	}
	if err := yaml.Unmarshal([]byte(text), &flat); err != nil {
		return controllerConfig{}, err
	}
	if flat.APIVersion == "" || flat.Kind == "" {
		return controllerConfig{}, fmt.Errorf("no apiVersion or kind")
	}
	if flat.Agent.TokenKeyFile == "" {
		return controllerConfig{}, fmt.Errorf("no agent.tokenKeyFile; the chart's key Secret would be unused")
	}
	agent, err := splitImage(flat.Agent.Image)
	if err != nil {
		return controllerConfig{}, fmt.Errorf("agent.image: %w", err)
	}
	agent.PullPolicy = flat.Agent.ImagePullPolicy

	var doc yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(text), &doc); err != nil {
		return controllerConfig{}, err
	}
	root := doc.Content[0]
	deleteKeys(root, "apiVersion", "kind")
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "agent" {
			deleteKeys(root.Content[i+1], "image", "imagePullPolicy")
		}
	}
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return controllerConfig{}, err
	}
	return controllerConfig{
		APIVersion:   flat.APIVersion,
		Kind:         flat.Kind,
		Agent:        agent,
		TokenKeyFile: flat.Agent.TokenKeyFile,
		Settings:     strings.TrimRight(b.String(), "\n"),
	}, nil
}

// deleteKeys removes the keys (and their comments) from the mapping node m.
func deleteKeys(m *yamlv3.Node, keys ...string) {
	var kept []*yamlv3.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		drop := false
		for _, k := range keys {
			drop = drop || m.Content[i].Value == k
		}
		if !drop {
			kept = append(kept, m.Content[i], m.Content[i+1])
		}
	}
	m.Content = kept
}
