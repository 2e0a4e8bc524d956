package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Binaries are the files CopyBinaries copies from the image into /opt/kubox/bin.
var Binaries = []string{"runsc", "containerd-shim-runsc-v1"}

// maxBinaryBytes bounds each binary copied.
const maxBinaryBytes = 256 << 20

// CopyBinaries copies Binaries from srcDir (kubox-node's image) to /opt/kubox/bin below
// hostRoot, each by an atomic rename, so a running shim keeps its old file. It reports whether
// any changed.
func CopyBinaries(hostRoot, srcDir string) (bool, error) {
	h, err := openHost(hostRoot)
	if err != nil {
		return false, err
	}
	defer h.close()
	bin, err := h.mkdirAll(kuboxDir + "/bin")
	if err != nil {
		return false, err
	}
	defer closeFD(bin)
	changed := false
	for _, name := range Binaries {
		src := filepath.Join(srcDir, name)
		st, err := os.Stat(src)
		if err != nil {
			return false, fmt.Errorf("kubox-node's image lacks %s: %w", src, err)
		}
		if st.Size() > maxBinaryBytes {
			return false, fmt.Errorf("%s is larger than %d bytes", src, maxBinaryBytes)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return false, err
		}
		w, err := writeIfDiffersLimit(bin, name, data, 0o755, maxBinaryBytes)
		if err != nil {
			return false, fmt.Errorf("install %s: %w", abs(kuboxDir+"/bin/"+name), err)
		}
		changed = changed || w
	}
	return changed, nil
}

// RemoveBinaries removes what CopyBinaries copied (a running shim keeps its open file). With
// nothing installed it does nothing.
func RemoveBinaries(hostRoot string) error {
	h, err := openHost(hostRoot)
	if err != nil {
		return err
	}
	defer h.close()
	bin, err := h.openDir(kuboxDir + "/bin")
	if errors.Is(err, errNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closeFD(bin)
	for _, name := range Binaries {
		if err := unlinkAt(bin, name); err != nil {
			return fmt.Errorf("remove %s: %w", abs(kuboxDir+"/bin/"+name), err)
		}
	}
	return nil
}
