package codeinterp

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/kubox-dev/kubox/internal/agent/process"
)

// The drivers run in the sandbox as the context's interpreter (see each file's header for its
// protocol). They are passed on the command line (-c, -e), so nothing is written to disk.
var (
	//go:embed driver.py
	pythonDriver string
	//go:embed driver.js
	nodeDriver string
	//go:embed driver.sh
	bashDriver string
)

// Languages a context can have, as E2B's wire names them.
const (
	Python     = "python"
	JavaScript = "javascript"
	Bash       = "bash"
)

// supported names the languages for errors.
const supported = `"python", "javascript" (or "js") and "bash"`

// language is how a context of one language runs and is fed.
type language struct {
	argv []string
	// program is the interpreter the image must have (on PATH), and what provides it.
	program, provider string
	// request encodes one execution for the driver's stdin; env applies to it alone.
	request func(code string, env map[string]string, base map[string]string) ([]byte, error)
}

var languages = map[string]language{
	Python: {argv: []string{"python3", "-c", pythonDriver}, program: "python3", provider: "Python 3", request: jsonRequest},
	// The shell moves the agent's stdin to fd 3 for Node, which cannot do it itself (see driver.js).
	JavaScript: {argv: []string{"/bin/sh", "-c", `exec 3<&0 0</dev/null; exec node -e "$1"`, "kubox-code-interpreter", nodeDriver},
		program: "node", provider: "Node.js", request: jsonRequest},
	Bash: {argv: []string{"bash", "--norc", "--noprofile", "-c", bashDriver}, program: "bash", provider: "bash",
		request: bashRequest},
}

// normalizeLanguage maps E2B's language names to a supported one, as E2B's server does ("" is
// Python, "js" JavaScript, case and spaces ignored), or fails naming the supported ones.
func normalizeLanguage(l string) (string, error) {
	switch n := strings.ToLower(strings.TrimSpace(l)); n {
	case "", Python:
		return Python, nil
	case "js", JavaScript:
		return JavaScript, nil
	case Bash:
		return Bash, nil
	default:
		return "", fmt.Errorf("kubox's code interpreter has no %q language: use %s", l, supported)
	}
}

// missingInterpreter is a context whose language's interpreter the sandbox does not have.
type missingInterpreter struct{ msg string }

func (e *missingInterpreter) Error() string { return e.msg }

// findInterpreter fails with a *missingInterpreter when the interpreter of lang is not on the
// PATH of env (as the process manager looks for it from dir), naming the language, the program
// and the fix.
func findInterpreter(lang string, env []string, dir string) error {
	l := languages[lang]
	if _, err := process.LookPath(l.program, env, dir); err != nil {
		return &missingInterpreter{fmt.Sprintf(
			"the %s language needs the program %q, which is not on this sandbox's PATH (%s): run the sandbox from an image that has %s (%s), or install it in the sandbox, or use another language (%s)",
			lang, l.program, process.PathOf(env), l.program, l.provider, supported)}
	}
	return nil
}

// jsonRequest is the Python and JavaScript drivers' request: one JSON line.
func jsonRequest(code string, env, _ map[string]string) ([]byte, error) {
	b, err := json.Marshal(struct {
		Code string            `json:"code"`
		Env  map[string]string `json:"env,omitempty"`
	}{code, env})
	return append(b, '\n'), err
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// bashRequest is the bash driver's request: the lengths of three parts, then the parts: the
// exports of env, the code, and what restores the environment after it (the interpreter's
// starting value, base, or unset), as E2B does.
func bashRequest(code string, env, base map[string]string) ([]byte, error) {
	if strings.IndexByte(code, 0) >= 0 {
		return nil, fmt.Errorf("the code contains a NUL byte, which bash cannot hold")
	}
	var pre, post strings.Builder
	for k, v := range env {
		if !shellName.MatchString(k) {
			return nil, fmt.Errorf("env_vars: %q is not a name bash can export (letters, digits and _, not first a digit)", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("env_vars: the value of %s contains a NUL byte", k)
		}
		fmt.Fprintf(&pre, "export %s=%s\n", k, shellQuote(v))
		if old, ok := base[k]; ok {
			fmt.Fprintf(&post, "export %s=%s\n", k, shellQuote(old))
		} else {
			fmt.Fprintf(&post, "unset %s\n", k)
		}
	}
	return fmt.Appendf(nil, "%d %d %d\n%s%s%s", pre.Len(), len(code), post.Len(), pre.String(), code, post.String()), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// checkEnv refuses names no environment can hold.
func checkEnv(env map[string]string) error {
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("env_vars: %q is not an environment variable name (no '=', no NUL, not empty) or its value has a NUL byte", k)
		}
	}
	return nil
}
