package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"os"
	"sync"
	"syscall"
	"time"
)

// Token is the agent token a request must present. One read from a file follows the file: a Pod
// restored from another Pod's checkpoint (a fork, which is a new Sandbox with its own token)
// mounts its own Sandbox's token Secret at the same path, and the restored agent, which read the
// source's token before the checkpoint, must take the new one and refuse the old at once. The file
// is looked at (one stat) for each request and read again only when it changed; a file that is
// briefly unreadable or invalid leaves the last good token in force.
type Token struct {
	file string
	mu   sync.Mutex
	seen fileKey
	sum  [sha256.Size]byte
}

// fileKey tells one version of a token file from another: the kubelet updates a Secret volume by
// swapping a symbolic link to a new folder, so the file followed is a new inode.
type fileKey struct {
	ino, dev uint64
	size     int64
	mtime    time.Time
}

// Fixed is a token that never changes (one from the environment, or a test's).
func Fixed(tok []byte) *Token { return &Token{sum: sha256.Sum256(tok)} }

// WatchFile loads the token from file (see LoadToken for what a valid token is) and keeps it
// current with the file.
func WatchFile(file string) (*Token, error) {
	// stat before the read: a change in between is seen, and read, at the next request
	key, statErr := statKey(file)
	tok, err := LoadToken(file, "")
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(tok)
	clear(tok) // only the digest stays in memory, so a Full snapshot of the agent holds no usable token
	if statErr != nil {
		return nil, statErr
	}
	return &Token{file: file, seen: key, sum: sum}, nil
}

// Matches reports whether presented is the current token, comparing SHA-256 digests in constant
// time so the time taken reveals neither the token's bytes nor its length.
func (t *Token) Matches(presented []byte) bool {
	want := t.current()
	got := sha256.Sum256(presented)
	return subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

func (t *Token) current() [sha256.Size]byte {
	if t.file == "" {
		return t.sum
	}
	key, err := statKey(t.file)
	t.mu.Lock()
	defer t.mu.Unlock()
	if err != nil || key == t.seen {
		return t.sum
	}
	b, err := os.ReadFile(t.file)
	if err != nil {
		return t.sum
	}
	defer clear(b) // keep only the digest (see WatchFile)
	tok, err := checkToken(bytes.TrimSpace(b), "the agent token file "+t.file, t.file)
	if err != nil {
		return t.sum
	}
	t.seen, t.sum = key, sha256.Sum256(tok)
	return t.sum
}

func statKey(file string) (fileKey, error) {
	st, err := os.Stat(file)
	if err != nil {
		return fileKey{}, err
	}
	k := fileKey{size: st.Size(), mtime: st.ModTime()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		k.ino, k.dev = sys.Ino, uint64(sys.Dev) //nolint:unconvert // Dev is uint32 on some platforms
	}
	return k, nil
}
