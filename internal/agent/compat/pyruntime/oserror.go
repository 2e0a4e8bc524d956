package pyruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// pythonDefaultPath is Python's os.defpath: where subprocess looks for a program when PATH is
// not set.
const pythonDefaultPath = "/bin:/usr/bin"

// osError is an OSError as Python's str() writes it, which python-runtime puts after "Failed to
// execute command: " and its clients see: "[Errno 2] No such file or directory: 'nosuch'".
type osError struct {
	errno    syscall.Errno
	filename string
}

func (e *osError) Error() string {
	return fmt.Sprintf("[Errno %d] %s: %s", int(e.errno), strerror(e.errno), pyRepr(e.filename))
}

// strerror is C's strerror (glibc and musl agree) for the errors findProgram reports.
func strerror(errno syscall.Errno) string {
	switch errno {
	case syscall.ENOENT:
		return "No such file or directory"
	case syscall.EACCES:
		return "Permission denied"
	case syscall.ENOTDIR:
		return "Not a directory"
	}
	s := errno.Error()
	return strings.ToUpper(s[:1]) + s[1:]
}

// findProgram reports why Python's subprocess could not start program in dir, or nil when it
// could find it. Like subprocess it tries program itself when it has a slash, and otherwise
// each directory of path in turn (relative ones from dir), and reports the first error other
// than "not found" (a file that is not executable, a directory), or else ENOENT; the error names
// program as it was given.
func findProgram(program, dir, path string) error {
	candidates := []string{program}
	if !strings.Contains(program, "/") {
		candidates = candidates[:0]
		for _, d := range strings.Split(path, string(os.PathListSeparator)) { // "" is the base directory
			candidates = append(candidates, filepath.Join(d, program))
		}
	}
	var first, last syscall.Errno = 0, syscall.ENOENT
	for _, c := range candidates {
		if !filepath.IsAbs(c) {
			c = filepath.Join(dir, c)
		}
		errno := executable(c)
		if errno == 0 {
			return nil
		}
		if errno != syscall.ENOENT && errno != syscall.ENOTDIR && first == 0 {
			first = errno
		}
		last = errno
	}
	if first != 0 {
		last = first
	}
	return &osError{errno: last, filename: program}
}

// executable returns the error execve would fail with for p, as far as the file system tells, or
// 0 when p is a file this process may execute.
func executable(p string) syscall.Errno {
	st, err := os.Stat(p)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno
		}
		return syscall.ENOENT
	}
	if st.IsDir() {
		return syscall.EACCES
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return syscall.EACCES
	}
	return 0
}
