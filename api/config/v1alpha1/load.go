package v1alpha1

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Load reads the configuration file at path ("" means no file: all defaults), rejects unknown
// fields and a wrong apiVersion or kind, applies defaults and validates the result.
func Load(path string) (*ControllerConfiguration, error) {
	c := &ControllerConfiguration{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("reading controller configuration: %w", err)
		}
		if err := yaml.UnmarshalStrict(bytes.TrimSpace(data), c); err != nil {
			return nil, fmt.Errorf("parsing controller configuration %s: %w", path, err)
		}
		if c.APIVersion != GroupVersion.String() || c.Kind != "ControllerConfiguration" {
			return nil, fmt.Errorf("controller configuration %s: want apiVersion %s and kind ControllerConfiguration, got %q and %q",
				path, GroupVersion, c.APIVersion, c.Kind)
		}
	}
	SetDefaults(c)
	if errs := Validate(c); len(errs) > 0 {
		return nil, fmt.Errorf("controller configuration %s is invalid: %w", path, errs.ToAggregate())
	}
	return c, nil
}
