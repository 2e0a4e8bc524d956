package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// Bounds of the tools.
const (
	// defaultRunTimeout is how long a command runs when the call gives no timeout_seconds.
	defaultRunTimeout = 5 * time.Minute
	// maxReadBytes bounds read_file: a file larger than this is refused with a pointer to
	// run_command (head, grep) rather than flooding the model's context.
	maxReadBytes = 1 << 20
)

// claimIn is claim_sandbox's input.
type claimIn struct {
	Pool       string            `json:"pool,omitempty" jsonschema:"the SandboxWarmPool to claim from (a pre-started sandbox: fast); give pool or template"`
	Template   string            `json:"template,omitempty" jsonschema:"the SandboxTemplate to start a new sandbox from; give pool or template"`
	Namespace  string            `json:"namespace,omitempty" jsonschema:"namespace of the pool or template; default: the server's namespace"`
	TTLSeconds int               `json:"ttl_seconds,omitempty" jsonschema:"delete the sandbox this many seconds from now; default: the server's claim TTL"`
	Env        map[string]string `json:"env,omitempty" jsonschema:"environment variables for the sandbox (its template must allow them)"`
}

type claimOut struct {
	Claim     string `json:"claim" jsonschema:"the claim's name: pass it as claim to the other tools"`
	Namespace string `json:"namespace"`
	Sandbox   string `json:"sandbox" jsonschema:"the Sandbox bound to the claim"`
	ExpiresAt string `json:"expires_at" jsonschema:"when kubox deletes the claim and its sandbox (RFC 3339)"`
}

// targetIn names the sandbox of a call.
type targetIn struct {
	Claim     string `json:"claim,omitempty" jsonschema:"the claim claim_sandbox returned (optional with a claim token)"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the claim's namespace; default: the server's namespace"`
}

type runIn struct {
	Claim          string            `json:"claim,omitempty" jsonschema:"the claim claim_sandbox returned (optional with a claim token)"`
	Namespace      string            `json:"namespace,omitempty" jsonschema:"the claim's namespace; default: the server's namespace"`
	Command        string            `json:"command" jsonschema:"a command line, run by /bin/sh -c (pipes and redirections work)"`
	Cwd            string            `json:"cwd,omitempty" jsonschema:"working directory (must exist); default: the agent's"`
	Env            map[string]string `json:"env,omitempty" jsonschema:"extra environment variables"`
	Stdin          string            `json:"stdin,omitempty" jsonschema:"text given on standard input"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty" jsonschema:"kill the command after this many seconds; default 300"`
}

type runOut struct {
	ExitCode        int    `json:"exit_code" jsonschema:"the exit status; 128+n when signal n killed it (a timeout kills with SIGKILL: 137)"`
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated,omitempty" jsonschema:"stdout was longer than returned (all of it was sent as progress)"`
	StderrTruncated bool   `json:"stderr_truncated,omitempty"`
}

type readIn struct {
	Claim     string `json:"claim,omitempty" jsonschema:"the claim claim_sandbox returned (optional with a claim token)"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the claim's namespace; default: the server's namespace"`
	Path      string `json:"path" jsonschema:"absolute path of the file in the sandbox"`
}

type readOut struct {
	Path     string `json:"path"`
	Size     int    `json:"size"`
	Encoding string `json:"encoding" jsonschema:"utf-8, or base64 for content that is not UTF-8 text"`
	Content  string `json:"content"`
}

type writeIn struct {
	Claim     string `json:"claim,omitempty" jsonschema:"the claim claim_sandbox returned (optional with a claim token)"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the claim's namespace; default: the server's namespace"`
	Path      string `json:"path" jsonschema:"absolute path of the file; missing parent directories are created"`
	Content   string `json:"content"`
	Encoding  string `json:"encoding,omitempty" jsonschema:"utf-8 (default) or base64"`
	Mode      string `json:"mode,omitempty" jsonschema:"permission bits in octal, e.g. 0755; default 0644"`
}

type writeOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

type listIn struct {
	Claim     string `json:"claim,omitempty" jsonschema:"the claim claim_sandbox returned (optional with a claim token)"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the claim's namespace; default: the server's namespace"`
	Path      string `json:"path" jsonschema:"absolute path of the directory"`
}

type entry struct {
	Name     string `json:"name"`
	Type     string `json:"type" jsonschema:"file, dir or symlink"`
	Size     int64  `json:"size"`
	Mode     string `json:"mode"`
	Modified string `json:"modified"`
}

type listOut struct {
	Path    string  `json:"path"`
	Entries []entry `json:"entries"`
}

type releaseOut struct {
	Released string `json:"released" jsonschema:"namespace/claim of the deleted claim"`
}

// addTools registers the tools.
func (s *Server) addTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "claim_sandbox", Description: "Claim an isolated sandbox (a container under gVisor or " +
		"another sandboxed runtime) from a warm pool or a template, and wait until it is ready. Returns the claim to pass to the other tools."},
		s.claimSandbox)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_command", Description: "Run a shell command in the sandbox and return its exit code, " +
		"stdout and stderr; the output is also streamed as progress notifications while it runs."}, s.runCommand)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_code", Description: "Run code (python, javascript or bash) in the sandbox's " +
		"code interpreter, which keeps state per claim and language: variables, imports and the working directory set in one " +
		"call are there in the next. Returns the last expression's value and other results (text, HTML, Markdown, JSON; " +
		"images as image content), stdout and stderr (also streamed as progress notifications), and the error with its traceback."}, s.runCode)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "read_file", Description: "Read a file of the sandbox (up to 1 MiB)."}, s.readFile)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "write_file", Description: "Write a file in the sandbox, creating its directories."}, s.writeFile)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_files", Description: "List a directory of the sandbox."}, s.listFiles)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "release_sandbox", Description: "Release the sandbox: delete its claim, the sandbox " +
		"and its files. Sandboxes are also released when the MCP session ends or they sit unused."}, s.releaseSandbox)
}

func (s *Server) claimSandbox(ctx context.Context, req *mcp.CallToolRequest, in claimIn) (*mcp.CallToolResult, claimOut, error) {
	c, err := s.callerOf(req)
	if err != nil {
		return nil, claimOut{}, err
	}
	if c.kube == nil {
		return nil, claimOut{}, fmt.Errorf("a claim token reaches only its own claim %s/%s: claiming needs a Kubernetes token "+
			"(one with RBAC create on sandboxclaims)", c.grant.Namespace, c.grant.Claim)
	}
	var src kubox.ClaimSource
	switch {
	case in.Pool != "" && in.Template == "":
		src = kubox.FromPool(in.Pool)
	case in.Template != "" && in.Pool == "":
		src = kubox.FromTemplate(in.Template)
	default:
		return nil, claimOut{}, errors.New("give exactly one of pool (a SandboxWarmPool) and template (a SandboxTemplate)")
	}
	ttl := s.cfg.ClaimTTL
	if in.TTLSeconds < 0 {
		return nil, claimOut{}, fmt.Errorf("ttl_seconds %d is negative", in.TTLSeconds)
	} else if in.TTLSeconds > 0 {
		ttl = time.Duration(in.TTLSeconds) * time.Second
	}
	ns := s.namespace(in.Namespace)
	opts := []kubox.ClaimOption{kubox.InNamespace(ns), kubox.WithTTL(ttl), kubox.WithLabels(map[string]string{managedByLabel: "mcp"})}
	if len(in.Env) > 0 {
		opts = append(opts, kubox.WithEnv(in.Env))
	}
	expires := time.Now().Add(ttl)
	sb, err := c.kube.Claim(ctx, src, opts...)
	if err != nil {
		return nil, claimOut{}, err
	}
	s.claims.add(ns+"/"+sb.ClaimName(), c.id, sessionID(req), sb)
	return nil, claimOut{Claim: sb.ClaimName(), Namespace: ns, Sandbox: sb.Name(), ExpiresAt: expires.UTC().Format(time.RFC3339)}, nil
}

// managedByLabel marks the claims the MCP server made, so an operator can list them.
const managedByLabel = "kubox.dev/created-by"

func (s *Server) runCommand(ctx context.Context, req *mcp.CallToolRequest, in runIn) (*mcp.CallToolResult, runOut, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, runOut{}, errors.New("command is empty: give a command line, e.g. \"ls -la /\"")
	}
	cmd := kubox.Cmd{Shell: in.Command, Dir: in.Cwd, Env: in.Env, Timeout: timeout(in.TimeoutSeconds)}
	if in.Stdin != "" {
		cmd.Stdin = strings.NewReader(in.Stdin)
	}
	return s.run(ctx, req, in.Namespace, in.Claim, cmd)
}

func timeout(seconds int) time.Duration {
	if seconds <= 0 {
		return defaultRunTimeout
	}
	return time.Duration(seconds) * time.Second
}

// run starts cmd in the sandbox, streams its output as progress, and returns the result.
func (s *Server) run(ctx context.Context, req *mcp.CallToolRequest, ns, claim string, cmd kubox.Cmd) (*mcp.CallToolResult, runOut, error) {
	sb, err := s.sandbox(ctx, req, ns, claim)
	if err != nil {
		return nil, runOut{}, err
	}
	stdout, stderr := &capped{max: s.cfg.MaxOutputBytes}, &capped{max: s.cfg.MaxOutputBytes}
	prog := newProgress(ctx, req)
	cmd.Stdout = io.MultiWriter(stdout, prog.stream("stdout"))
	cmd.Stderr = io.MultiWriter(stderr, prog.stream("stderr"))
	p, err := sb.Start(ctx, cmd)
	if err != nil {
		return nil, runOut{}, err
	}
	code, err := p.Wait()
	if err != nil {
		return nil, runOut{}, err
	}
	out := runOut{ExitCode: code, Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: stdout.truncated, StderrTruncated: stderr.truncated}
	return nil, out, nil
}

func (s *Server) readFile(ctx context.Context, req *mcp.CallToolRequest, in readIn) (*mcp.CallToolResult, readOut, error) {
	sb, err := s.sandbox(ctx, req, in.Namespace, in.Claim)
	if err != nil {
		return nil, readOut{}, err
	}
	r, err := sb.Files().Read(ctx, in.Path)
	if err != nil {
		return nil, readOut{}, err
	}
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(io.LimitReader(r, maxReadBytes+1))
	if err != nil {
		return nil, readOut{}, err
	}
	if len(data) > maxReadBytes {
		return nil, readOut{}, fmt.Errorf("%s is larger than %d bytes: read parts of it with run_command (head, tail, grep)", in.Path, maxReadBytes)
	}
	out := readOut{Path: in.Path, Size: len(data), Encoding: "utf-8", Content: string(data)}
	if !utf8.Valid(data) {
		out.Encoding, out.Content = "base64", base64.StdEncoding.EncodeToString(data)
	}
	return nil, out, nil
}

func (s *Server) writeFile(ctx context.Context, req *mcp.CallToolRequest, in writeIn) (*mcp.CallToolResult, writeOut, error) {
	data := []byte(in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, writeOut{}, fmt.Errorf("content is not base64: %v", err)
		}
	default:
		return nil, writeOut{}, fmt.Errorf("encoding %q is not utf-8 or base64", in.Encoding)
	}
	mode := os.FileMode(0o644)
	if in.Mode != "" {
		m, err := strconv.ParseUint(in.Mode, 8, 32)
		if err != nil || m > 0o7777 {
			return nil, writeOut{}, fmt.Errorf("mode %q is not octal permission bits such as 0644 or 0755", in.Mode)
		}
		mode = os.FileMode(m)
	}
	sb, err := s.sandbox(ctx, req, in.Namespace, in.Claim)
	if err != nil {
		return nil, writeOut{}, err
	}
	if err := sb.Files().WriteFile(ctx, in.Path, data, mode); err != nil {
		return nil, writeOut{}, err
	}
	return nil, writeOut{Path: in.Path, Bytes: len(data)}, nil
}

func (s *Server) listFiles(ctx context.Context, req *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, listOut, error) {
	sb, err := s.sandbox(ctx, req, in.Namespace, in.Claim)
	if err != nil {
		return nil, listOut{}, err
	}
	infos, err := sb.Files().List(ctx, in.Path)
	if err != nil {
		return nil, listOut{}, err
	}
	out := listOut{Path: in.Path, Entries: make([]entry, 0, len(infos))}
	for _, fi := range infos {
		typ := "file"
		switch {
		case fi.IsDir:
			typ = "dir"
		case fi.Mode&os.ModeSymlink != 0:
			typ = "symlink"
		}
		out.Entries = append(out.Entries, entry{Name: fi.Name, Type: typ, Size: fi.Size,
			Mode: fmt.Sprintf("%04o", fi.Mode.Perm()), Modified: fi.ModTime.UTC().Format(time.RFC3339)})
	}
	return nil, out, nil
}

func (s *Server) releaseSandbox(ctx context.Context, req *mcp.CallToolRequest, in targetIn) (*mcp.CallToolResult, releaseOut, error) {
	c, err := s.callerOf(req)
	if err != nil {
		return nil, releaseOut{}, err
	}
	if c.kube == nil {
		return nil, releaseOut{}, fmt.Errorf("a claim token cannot delete its claim %s/%s: releasing needs a Kubernetes token "+
			"(RBAC delete on sandboxclaims); the claim ends at its TTL", c.grant.Namespace, c.grant.Claim)
	}
	sb, err := s.sandbox(ctx, req, in.Namespace, in.Claim)
	if err != nil {
		return nil, releaseOut{}, err
	}
	if err := sb.Close(ctx); err != nil {
		return nil, releaseOut{}, err
	}
	key := s.namespace(in.Namespace) + "/" + in.Claim
	s.claims.forget(key)
	return nil, releaseOut{Released: key}, nil
}

// sandbox returns the sandbox a call names, acting as its caller.
func (s *Server) sandbox(ctx context.Context, req *mcp.CallToolRequest, ns, claim string) (*kubox.Sandbox, error) {
	c, err := s.callerOf(req)
	if err != nil {
		return nil, err
	}
	if c.kube == nil {
		g := c.grant
		if (claim != "" && claim != g.Claim) || (ns != "" && ns != g.Namespace) {
			return nil, fmt.Errorf("this claim token reaches only claim %s/%s, not %s/%s", g.Namespace, g.Claim, s.namespace(ns), claim)
		}
		return c.attach(s.cfg.RouterURL)
	}
	if claim == "" {
		return nil, errors.New("claim is empty: give the claim that claim_sandbox returned")
	}
	ns = s.namespace(ns)
	key := ns + "/" + claim
	if sb := s.claims.owned(key, c.id); sb != nil {
		s.claims.touch(key)
		return sb, nil
	}
	return c.kube.Connect(ctx, claim, kubox.InNamespace(ns))
}

func (s *Server) namespace(ns string) string {
	if ns == "" {
		return s.cfg.Namespace
	}
	return ns
}

// sessionID is the MCP session of req; "" for stdio and sessionless requests.
func sessionID(req *mcp.CallToolRequest) string {
	if req.Session == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return ""
	}
	return req.Session.ID()
}
