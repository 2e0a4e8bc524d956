package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestDevHelpListsCommands(t *testing.T) {
	var out bytes.Buffer
	root := NewCommand()
	root.SetOut(&out)
	root.SetArgs([]string{"dev", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"up ", "down ", "status ", "images ", "--state-dir", "--repo"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("kubox dev --help lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDevStatusWithoutEnvironment(t *testing.T) {
	var out bytes.Buffer
	root := NewCommand()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"dev", "status", "--state-dir", t.TempDir() + "/none"})
	if err := root.Execute(); err == nil {
		t.Error("status of a missing environment succeeded; want an error")
	}
	if !strings.Contains(out.String(), "kubox dev is not up") {
		t.Errorf("status printed %q, want it to say the environment is not up", out.String())
	}
}
