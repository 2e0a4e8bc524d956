package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubox-dev/kubox/internal/testutil"
)

// completions runs cobra's hidden __complete command as a shell does and returns the words.
func (f *fixture) completions(t *testing.T, args ...string) []string {
	t.Helper()
	r := f.mustRun(t, append([]string{"__complete"}, args...)...)
	var words []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasPrefix(l, ":") { // the last line is the directive
			words = append(words, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return words
}

func TestCompletion(t *testing.T) {
	f := setup(t)
	env.Create(t, f.template("python").Obj())
	env.Create(t, f.template("node").Obj())
	env.Create(t, testutil.MakePool("warm", f.ns, "python").Replicas(0).Obj())
	f.sandbox(t, "alpha")
	f.sandbox(t, "beta")
	f.mustRun(t, "claim", "--template", "python", "--name", "mine")

	tests := map[string]struct {
		args []string
		want []string
	}{
		"exec NAME":           {[]string{"exec", ""}, []string{"alpha", "beta", "mine"}},
		"exec NAME prefix":    {[]string{"exec", "al"}, []string{"alpha"}},
		"exec --claim NAME":   {[]string{"exec", "--claim", ""}, []string{"mine"}},
		"exec after NAME":     {[]string{"exec", "alpha", ""}, nil},
		"cp SRC":              {[]string{"cp", "b"}, []string{"beta:"}},
		"delete more names":   {[]string{"delete", "alpha", ""}, []string{"alpha", "beta", "mine"}},
		"claim --template":    {[]string{"claim", "--template", ""}, []string{"node", "python"}},
		"run --pool":          {[]string{"run", "--pool", ""}, []string{"warm"}},
		"--connection values": {[]string{"get", "--connection", ""}, []string{"auto", "router", "direct", "port-forward"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := f.completions(t, tc.args...)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("completions of kubox %s = %q, want %q", strings.Join(tc.args, " "), got, want)
			}
		})
	}
}
