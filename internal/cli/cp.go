package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubox-dev/kubox/internal/atomicfile"
	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

// location is one side of kubox cp: a file in a sandbox (NAME:/path), a local file, or "-"
// (stdin as the source, stdout as the destination).
type location struct {
	name  string // the sandbox or claim; "" for a local file or "-"
	path  string
	stdio bool
}

func (l location) remote() bool { return l.name != "" }

func (l location) String() string {
	switch {
	case l.stdio:
		return "-"
	case l.remote():
		return l.name + ":" + l.path
	}
	return l.path
}

// parseLocation reads NAME:/path, "-" or a local path. A word is remote when what comes before
// its first ':' is a valid object name (so /tmp/a:b and ./a:b are local files); give a local
// file whose name looks like NAME:path as ./NAME:path.
func parseLocation(s string) (location, error) {
	if s == "-" {
		return location{stdio: true}, nil
	}
	if s == "" {
		return location{}, errors.New("an empty path: give a local path, - or NAME:/path")
	}
	name, p, ok := strings.Cut(s, ":")
	if !ok || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return location{path: s}, nil
	}
	if p == "" {
		return location{}, fmt.Errorf("%q names no file in %s: write %s:/path/to/file", s, name, name)
	}
	return location{name: name, path: p}, nil
}

// parseCopyArgs checks that exactly one of SRC and DST is in a sandbox.
func parseCopyArgs(src, dst string) (location, location, error) {
	from, err := parseLocation(src)
	if err != nil {
		return from, location{}, fmt.Errorf("SRC: %w", err)
	}
	to, err := parseLocation(dst)
	if err != nil {
		return from, to, fmt.Errorf("DST: %w", err)
	}
	switch {
	case from.remote() && to.remote():
		return from, to, fmt.Errorf("kubox cp copies between this machine and one sandbox, not %s and %s: copy to a local file first", from, to)
	case !from.remote() && !to.remote():
		return from, to, fmt.Errorf("kubox cp %s %s: neither side is in a sandbox: write one as NAME:/path", src, dst)
	}
	return from, to, nil
}

type cpOptions struct {
	target
}

func newCp(g *globalOptions) *cobra.Command {
	o := &cpOptions{}
	cmd := &cobra.Command{
		Use:   "cp SRC DST",
		Short: "Copy a file into or out of a sandbox",
		Long: `Copy one file between this machine and a sandbox. One of SRC and DST is NAME:/path, a file in
the Sandbox NAME (with --claim, in the sandbox of the claim NAME); the other a local path, or -
for stdin (as SRC) or stdout (as DST). The file is streamed, never held in memory whole; in the
sandbox it is written atomically with its parent directories created, and a local file is
written to a temporary file renamed into place. The mode bits are copied.

A DST that is a directory, or ends with /, receives the file under SRC's name.

Directories are not copied: kubox says so. Stream a tar archive through exec instead:
  kubox exec NAME -- tar -C /work -cf - . | tar -C ./work -xf -
  tar -C ./work -cf - . | kubox exec -i NAME -- tar -C /work -xf -

A local file whose name looks like NAME:path is written ./NAME:path.`,
		Example: `  # Upload and download
  kubox cp ./data.csv python-x7k2q:/work/data.csv
  kubox cp --claim kubox-x7k2:/work/out.json ./out.json

  # Into a directory, keeping the name
  kubox cp ./model.bin python-x7k2q:/work/

  # stdin and stdout
  echo hello | kubox cp - python-x7k2q:/tmp/hello.txt
  kubox cp python-x7k2q:/tmp/hello.txt -`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeCopyArgs(g, &o.target),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, to, err := parseCopyArgs(args[0], args[1])
			if err != nil {
				return err
			}
			return o.run(cmd, g, from, to)
		},
	}
	o.addFlag(cmd.Flags())
	return cmd
}

func (o *cpOptions) run(cmd *cobra.Command, g *globalOptions, from, to location) error {
	ctx := cmd.Context()
	name := from.name
	if to.remote() {
		name = to.name
	}
	s, sb, err := g.openSandbox(ctx, o.target, name)
	if err != nil {
		return err
	}
	defer s.close()
	files := sb.Files()
	if to.remote() {
		err = upload(ctx, files, from, to.path, cmd.InOrStdin())
	} else {
		err = download(ctx, files, from.path, to, cmd.OutOrStdout())
	}
	if err != nil {
		return fmt.Errorf("kubox cp %s %s: %w", from, to, explain(err, o.target, s.ns, name))
	}
	return nil
}

// upload copies the local file (or stdin) from to dst in the sandbox.
func upload(ctx context.Context, files *kubox.Files, from location, dst string, stdin io.Reader) error {
	src, mode := stdin, os.FileMode(0o644)
	base := ""
	if !from.stdio {
		f, err := os.Open(from.path)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fmt.Errorf("%s is a directory, and kubox cp copies files: stream a tar archive through kubox exec -i (see kubox cp --help)", from.path)
		}
		src, mode, base = f, fi.Mode().Perm(), filepath.Base(from.path)
	}
	dst, err := remoteTarget(ctx, files, dst, base)
	if err != nil {
		return err
	}
	return files.Write(ctx, dst, src, mode)
}

// remoteTarget is the file to write for dst: dst itself, or base inside it when dst is a
// directory (it ends with / or is one in the sandbox).
func remoteTarget(ctx context.Context, files *kubox.Files, dst, base string) (string, error) {
	isDir := strings.HasSuffix(dst, "/")
	if !isDir {
		fi, err := files.Stat(ctx, dst)
		switch {
		case err == nil:
			isDir = fi.IsDir
		case !errors.Is(err, kubox.ErrNotFound):
			return "", err
		}
	}
	if !isDir {
		return dst, nil
	}
	if base == "" {
		return "", fmt.Errorf("%s is a directory: name the file to write stdin to, e.g. %s", dst, path.Join(dst, "stdin.txt"))
	}
	return path.Join(dst, base), nil
}

// download copies src in the sandbox to the local file (or stdout) to.
func download(ctx context.Context, files *kubox.Files, src string, to location, stdout io.Writer) error {
	fi, err := files.Stat(ctx, src)
	if err != nil {
		return err
	}
	if fi.IsDir {
		return fmt.Errorf("%s is a directory in the sandbox, and kubox cp copies files: stream a tar archive through kubox exec (see kubox cp --help)", src)
	}
	r, err := files.Read(ctx, src)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	if to.stdio {
		_, err := io.Copy(stdout, r)
		return err
	}
	dst := to.path
	if st, err := os.Stat(dst); (err == nil && st.IsDir()) || strings.HasSuffix(dst, string(filepath.Separator)) {
		dst = filepath.Join(dst, path.Base(src))
	}
	return writeLocal(dst, r, fi.Mode.Perm())
}

// writeLocal streams r into dst atomically: dst is either the old file or the whole new one.
func writeLocal(dst string, r io.Reader, mode os.FileMode) error {
	return atomicfile.Write(dst, r, mode)
}
