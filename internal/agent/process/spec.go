package process

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// Spec says what to run and how. Exactly one of Argv and ShellCommand is set.
type Spec struct {
	// Argv is the program and its arguments; a program without a slash is looked up in the PATH of
	// the process's environment.
	Argv []string
	// ShellCommand is run as Options.Shell -c ShellCommand.
	ShellCommand string
	// Env is set on top of the Manager's base environment (Options.Environ, or Options.Env).
	Env map[string]string
	// Dir is the working directory; it must exist. Empty means the agent's.
	Dir string
	// Timeout, when positive, stops the process group after this long, as Process.Stop does
	// (SIGTERM, then SIGKILL after Options.StopGrace), and marks the exit TimedOut.
	Timeout time.Duration
	// Tag is a label shown by List.
	Tag string
	// PTY, when set, runs the process on a new terminal of this size.
	PTY *PTYSize
	// Stdin keeps stdin open for Input; otherwise the process reads /dev/null. A process on a PTY
	// always accepts input.
	Stdin bool
	// FlowControl holds the process's output from its start until the starter's Follow (with
	// flowControl, from offset 0) takes over, so that follower misses no byte. The starter must
	// Follow or call ReleaseHold, or the process stalls once it has written ReplayBytes.
	FlowControl bool
}

// PTYSize is a terminal size in character cells.
type PTYSize struct {
	Rows, Cols uint16
}

// defaultPath is the PATH used to find a program when the environment has none (the one Docker
// and Kubernetes images get).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// command is a validated Spec: what to exec.
type command struct {
	path string // resolved program
	argv []string
	env  []string
	dir  string
}

func invalid(format string, args ...any) error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
}

// resolve checks spec and finds its program. Errors are InvalidArgument and name the field.
func (m *Manager) resolve(spec Spec) (command, error) {
	var c command
	switch {
	case len(spec.Argv) > 0 && spec.ShellCommand != "":
		return c, invalid("spec: set either argv or shell_command, not both")
	case spec.ShellCommand != "":
		c.argv = []string{m.opts.Shell, "-c", spec.ShellCommand}
	case len(spec.Argv) == 0:
		return c, invalid(`spec.argv is empty: set argv (e.g. ["ls", "-l"]) or shell_command (e.g. "ls -l | wc -l")`)
	case spec.Argv[0] == "":
		return c, invalid("spec.argv[0] is empty: it must name the program to run")
	default:
		c.argv = slices.Clone(spec.Argv)
	}
	for i, a := range c.argv {
		if strings.IndexByte(a, 0) >= 0 {
			return c, invalid("spec.argv[%d] contains a NUL byte, which no program can receive", i)
		}
	}
	if spec.Timeout < 0 {
		return c, invalid("spec.timeout is negative (%s): leave it unset for no timeout", spec.Timeout)
	}
	if spec.PTY != nil && (spec.PTY.Rows == 0 || spec.PTY.Cols == 0) {
		return c, invalid("pty: rows and cols must be between 1 and 65535, got %dx%d", spec.PTY.Rows, spec.PTY.Cols)
	}
	env, err := mergeEnv(m.baseEnv(), spec.Env)
	if err != nil {
		return c, err
	}
	c.env = env
	if spec.Dir != "" {
		st, err := os.Stat(spec.Dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return c, invalid("spec.cwd: directory %q does not exist; create it first or pass an existing directory", spec.Dir)
		case err != nil:
			return c, invalid("spec.cwd: %v", err)
		case !st.IsDir():
			return c, invalid("spec.cwd: %q is not a directory", spec.Dir)
		}
		c.dir = spec.Dir
	}
	c.path, err = lookPath(c.argv[0], envPath(c.env), c.dir)
	if err != nil {
		return c, invalid("spec.argv[0]: %v", err)
	}
	return c, nil
}

// baseEnv is the environment a process starts from: Options.Environ's, or else Options.Env.
func (m *Manager) baseEnv() []string {
	if m.opts.Environ != nil {
		return m.opts.Environ()
	}
	return m.opts.Env
}

// mergeEnv returns base with the variables of set replacing or added, sorted by name for the added.
func mergeEnv(base []string, set map[string]string) ([]string, error) {
	names := make([]string, 0, len(set))
	for k, v := range set {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, invalid("spec.env: %q is not a valid variable name (it must be non-empty without '=' or NUL)", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, invalid("spec.env[%s]: the value contains a NUL byte", k)
		}
		names = append(names, k)
	}
	slices.Sort(names)
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			env = append(env, kv)
		}
	}
	for _, k := range names {
		env = append(env, k+"="+set[k])
	}
	return env, nil
}

func envPath(env []string) string {
	p := defaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			p = v
		}
	}
	return p
}

// lookPath finds program the way a shell does: a name with a slash is a path (relative to dir),
// anything else is searched in path.
func lookPath(program, path, dir string) (string, error) {
	if strings.Contains(program, "/") {
		p := program
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("%q %w", program, err)
		}
		return program, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, program)
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return filepath.Join(d, program), nil
		}
	}
	return "", fmt.Errorf("%q was not found in PATH (%s); install it or give its full path", program, path)
}

func executable(p string) error {
	st, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("does not exist")
	case err != nil:
		return err
	case st.IsDir():
		return errors.New("is a directory, not a program")
	case st.Mode()&0o111 == 0:
		return errors.New("is not executable (chmod +x it)")
	}
	return nil
}
