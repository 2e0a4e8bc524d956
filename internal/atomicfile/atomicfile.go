// Package atomicfile writes a file so that readers see either its old content or the whole new
// one, never a part: the content goes to a temporary file in the same directory, which is then
// given its mode and renamed over the destination.
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// Write streams r into dst with mode. The temporary file is named "."+base(dst)+".tmp-*" beside
// dst; on any error it is removed and dst is left as it was. The directory must exist.
func Write(dst string, r io.Reader, mode os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := io.Copy(tmp, r); err != nil {
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
