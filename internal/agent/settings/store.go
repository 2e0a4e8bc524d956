package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/kubox-dev/kubox/internal/agent/files"
	agentv1 "github.com/kubox-dev/kubox/proto/kubox/agent/v1"
)

// DefaultFileMode is the mode of a settings file that asks for none: readable by the sandbox's
// user only, as the files hold secrets.
const DefaultFileMode fs.FileMode = 0o400

// FileWriter writes a file atomically, creating its parents: the agent's *files.Root.
type FileWriter interface {
	WriteFile(p string, src io.Reader, opts files.WriteOptions) (files.Entry, error)
}

// Store holds the settings of the one claim a sandbox serves.
type Store struct {
	base  []string
	files FileWriter
	log   *slog.Logger

	mu sync.RWMutex
	// applied is the last request applied; nil until the first.
	applied *agentv1.ApplySettingsRequest
	// env is base with applied's variables set.
	env []string
}

// NewStore returns a Store whose environment is base ("NAME=value" strings, the agent's own)
// until a claim's settings are applied; files are written through w.
func NewStore(base []string, w FileWriter, log *slog.Logger) *Store {
	return &Store{base: slices.Clone(base), files: w, log: log, env: slices.Clone(base)}
}

// Environ returns the environment processes start from. The caller must not change it.
func (s *Store) Environ() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.env
}

// Apply validates req and applies it: it writes the files, then sets the variables for the
// processes started from then on. Errors carry connect codes: InvalidArgument naming the bad
// field, FailedPrecondition when another claim's settings were applied, Internal when a file
// cannot be written (the variables are then not set; the request may be retried).
func (s *Store) Apply(req *agentv1.ApplySettingsRequest) error {
	if err := validate(req); err != nil {
		return connect.NewError(connect.CodeInvalidArgument, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied != nil {
		if uid := s.applied.GetClaimUid(); uid != req.GetClaimUid() {
			return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
				"this sandbox already holds the settings of claim %s, not %s: a sandbox serves one claim; claim another sandbox", uid, req.GetClaimUid()))
		}
		if proto.Equal(s.applied, req) {
			return nil
		}
	}
	// No fsync: a claim's files are delivered again to every new Pod of the sandbox (the
	// controller remembers deliveries per Pod), so a crash loses nothing; the sync would cost the
	// claim's critical path tens of milliseconds.
	for _, f := range req.GetFiles() {
		mode := DefaultFileMode
		if f.GetMode() != 0 {
			mode = fs.FileMode(f.GetMode())
		}
		if _, err := s.files.WriteFile(f.GetPath(), bytes.NewReader(f.GetContent()), files.WriteOptions{Mode: &mode, NoSync: true}); err != nil {
			code := connect.CodeInternal
			if errors.Is(err, files.ErrOutsideRoot) {
				code = connect.CodeInvalidArgument
			}
			return connect.NewError(code, fmt.Errorf("writing settings file %s: %w", f.GetPath(), err))
		}
	}
	s.env = withEnv(s.base, req.GetEnv())
	s.applied = proto.CloneOf(req)
	s.log.Info("Applied a claim's settings", "claimUID", req.GetClaimUid(), "env", len(req.GetEnv()), "files", len(req.GetFiles()))
	return nil
}

// withEnv returns base with the variables of set replacing those of the same name, added in
// set's order.
func withEnv(base []string, set []*agentv1.EnvVar) []string {
	names := make(map[string]bool, len(set))
	for _, e := range set {
		names[e.GetName()] = true
	}
	env := make([]string, 0, len(base)+len(set))
	for _, kv := range base {
		if k, _, _ := strings.Cut(kv, "="); !names[k] {
			env = append(env, kv)
		}
	}
	for _, e := range set {
		env = append(env, e.GetName()+"="+e.GetValue())
	}
	return env
}

// validate checks req's claim UID, variable names and values, and file paths and modes; the
// error names the field.
func validate(req *agentv1.ApplySettingsRequest) error {
	if req.GetClaimUid() == "" {
		return errors.New("claim_uid is empty: name the claim the settings belong to")
	}
	seen := map[string]bool{}
	for i, e := range req.GetEnv() {
		if err := validName(e.GetName()); err != nil {
			return fmt.Errorf("env[%d].name %q: %w", i, e.GetName(), err)
		}
		if strings.IndexByte(e.GetValue(), 0) >= 0 {
			return fmt.Errorf("env[%d] (%s): the value contains a NUL byte, which no process can receive", i, e.GetName())
		}
		if seen[e.GetName()] {
			return fmt.Errorf("env[%d]: %s appears twice", i, e.GetName())
		}
		seen[e.GetName()] = true
	}
	paths := map[string]bool{}
	for i, f := range req.GetFiles() {
		p := f.GetPath()
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" || strings.IndexByte(p, 0) >= 0 {
			return fmt.Errorf("files[%d].path %q must be an absolute, clean file path (no '..', '//' or trailing '/')", i, p)
		}
		if f.GetMode()&^0o777 != 0 {
			return fmt.Errorf("files[%d].mode %#o holds more than permission bits (at most 0777)", i, f.GetMode())
		}
		if paths[p] {
			return fmt.Errorf("files[%d]: %s appears twice", i, p)
		}
		paths[p] = true
	}
	return nil
}

// validName accepts what Kubernetes accepts as an environment variable name: printable ASCII
// other than '='.
func validName(name string) error {
	if name == "" {
		return errors.New("the name is empty")
	}
	for _, c := range []byte(name) {
		if c < ' ' || c > '~' || c == '=' {
			return errors.New("a name must consist of printable ASCII characters other than '='")
		}
	}
	return nil
}
