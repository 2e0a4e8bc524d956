package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	extv1beta1 "github.com/kubox-dev/kubox/api/extensions/v1beta1"
	"github.com/kubox-dev/kubox/internal/testutil"
	"github.com/kubox-dev/kubox/test/integration/framework"
)

// noClaims checks that the namespace has no claim left.
func noClaims(t *testing.T, ns string) {
	t.Helper()
	framework.Eventually(t, func() (bool, string) {
		list := &extv1beta1.SandboxClaimList{}
		if err := env.Client.List(t.Context(), list); err != nil {
			return false, err.Error()
		}
		var names []string
		for _, c := range list.Items {
			if c.Namespace == ns && c.DeletionTimestamp == nil {
				names = append(names, c.Name)
			}
		}
		return len(names) == 0, "claims left: " + strings.Join(names, ", ")
	})
}

func TestRunPassesExitCodesAndReleasesTheClaim(t *testing.T) {
	f := setup(t).withAgents()
	env.Create(t, f.template("python").Obj())
	tests := map[string]struct {
		script               string
		wantCode             int
		wantStdout, wantErrs string
	}{
		"success":       {script: "echo hello", wantCode: 0, wantStdout: "hello\n"},
		"exit code 3":   {script: "echo out; echo oops >&2; exit 3", wantCode: 3, wantStdout: "out\n", wantErrs: "oops\n"},
		"killed by 9":   {script: "kill -9 $$", wantCode: 137},
		"exit code 255": {script: "exit 255", wantCode: 255},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			served := make(chan struct{})
			go func() {
				defer close(served)
				f.serveNext(t)
			}()
			r := f.run(t, "run", "--template", "python", "--", "sh", "-c", tc.script)
			<-served
			if r.code != tc.wantCode || r.stdout != tc.wantStdout || !strings.HasSuffix(r.stderr, tc.wantErrs) {
				t.Errorf("kubox run -- sh -c %q: exit %d, stdout %q, stderr %q; want %d, %q, stderr ending %q",
					tc.script, r.code, r.stdout, r.stderr, tc.wantCode, tc.wantStdout, tc.wantErrs)
			}
			noClaims(t, f.ns)
		})
	}
}

// TestRunStreamsOutput checks that output reaches kubox's stdout while the command still runs.
func TestRunStreamsOutput(t *testing.T) {
	f := setup(t).withAgents()
	env.Create(t, f.template("python").Obj())
	go f.serveNext(t)
	out, errOut := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- f.kubox(t, nil, out, errOut, "run", "--template", "python", "--keep", "--",
			"sh", "-c", "echo first; sleep 5; echo second")
	}()
	framework.WaitFor(t, time.Minute, func() (bool, string) {
		return strings.Contains(out.String(), "first\n"), "stdout: " + out.String() + "; stderr: " + errOut.String()
	})
	select {
	case code := <-done:
		t.Fatalf("kubox run exited (%d) before the output was seen; stdout %q", code, out.String())
	default:
	}
	if strings.Contains(out.String(), "second") {
		t.Errorf("stdout %q already has the second line; the test cannot tell streaming from buffering", out.String())
	}
	if code := <-done; code != 0 || out.String() != "first\nsecond\n" {
		t.Errorf("kubox run: exit %d, stdout %q; want 0, first and second", code, out.String())
	}
	if !strings.Contains(errOut.String(), "kept with sandbox") || !strings.Contains(errOut.String(), "kubox delete --claim kubox-") {
		t.Errorf("stderr %q does not say how to use and delete the kept claim", errOut.String())
	}
	list := &extv1beta1.SandboxClaimList{}
	if err := env.Client.List(t.Context(), list); err != nil {
		t.Fatal(err)
	}
	kept := 0
	for _, c := range list.Items {
		if c.Namespace == f.ns && c.DeletionTimestamp == nil {
			kept++
		}
	}
	if kept != 1 {
		t.Errorf("%d claims after kubox run --keep, want the one kept", kept)
	}
}

// TestRunInterruptedReleasesTheClaim plays Ctrl-C during kubox run: the command gets SIGINT,
// the claim is released and kubox exits 130.
func TestRunInterruptedReleasesTheClaim(t *testing.T) {
	f := setup(t).withAgents()
	env.Create(t, f.template("python").Obj())
	go f.serveNext(t)
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	out, errOut := &testutil.SyncBuffer{}, &testutil.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- f.kuboxContext(ctx, nil, out, errOut, "run", "--template", "python", "--",
			"sh", "-c", "trap 'echo got-INT; exit 9' INT; echo started; while :; do sleep 0.1; done")
	}()
	framework.WaitFor(t, time.Minute, func() (bool, string) {
		return strings.Contains(out.String(), "started"), "stdout: " + out.String() + "; stderr: " + errOut.String()
	})
	interrupt()
	select {
	case code := <-done:
		if code != 130 || !strings.Contains(errOut.String(), "error: interrupted") {
			t.Errorf("interrupted kubox run exited %d with stderr %q; want 130, interrupted", code, errOut.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("kubox run did not return after Ctrl-C")
	}
	if !strings.Contains(out.String(), "got-INT") {
		t.Errorf("stdout %q: the command did not get SIGINT, or its output was lost", out.String())
	}
	noClaims(t, f.ns)
}

func TestExec(t *testing.T) {
	f := setup(t).withAgents()
	f.sandbox(t, "box")
	f.serve(t, "box")

	r := f.run(t, "exec", "box", "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 7")
	if r.code != 7 || r.stdout != "to-out\n" || r.stderr != "to-err\n" {
		t.Errorf("kubox exec: exit %d, stdout %q, stderr %q; want 7, to-out, to-err", r.code, r.stdout, r.stderr)
	}

	var out, errOut bytes.Buffer
	code := f.kubox(t, strings.NewReader("line one\nline two\n"), &out, &errOut, "exec", "-i", "box", "--", "wc", "-l")
	if code != 0 || strings.TrimSpace(out.String()) != "2" {
		t.Errorf("kubox exec -i box -- wc -l: exit %d, stdout %q, stderr %q; want 0 and 2 lines read from stdin", code, out.String(), errOut.String())
	}

	r = f.run(t, "exec", "-t", "box", "--", "true")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: -t ignored: stdin is not a terminal") {
		t.Errorf("kubox exec -t without a terminal: exit %d, stderr %q; want 0 and a warning", r.code, r.stderr)
	}
}

func TestExecByClaim(t *testing.T) {
	f := setup(t).withAgents()
	env.Create(t, f.template("python").Obj())
	go f.serveNext(t)
	f.mustRun(t, "claim", "--template", "python", "--name", "mine")
	r := f.run(t, "exec", "--claim", "mine", "--", "sh", "-c", "echo in-claim")
	if r.code != 0 || r.stdout != "in-claim\n" {
		t.Errorf("kubox exec --claim mine: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// writeRandomFile writes size random bytes to path and returns their SHA-256.
func writeRandomFile(t *testing.T, path string, size int64) [32]byte {
	t.Helper()
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(file, h), rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func TestCopyHundredMegabytesBothWays(t *testing.T) {
	f := setup(t).withAgents()
	f.sandbox(t, "box")
	root := f.serve(t, "box")
	local := t.TempDir()
	src := filepath.Join(local, "big.bin")
	want := writeRandomFile(t, src, 100<<20)
	if err := os.Chmod(src, 0o750); err != nil {
		t.Fatal(err)
	}

	f.mustRun(t, "cp", src, "box:/data/big.bin")
	if got := fileSum(t, filepath.Join(root, "data", "big.bin")); got != want {
		t.Fatalf("the uploaded file differs: sha256 %x, want %x", got, want)
	}
	if fi, err := os.Stat(filepath.Join(root, "data", "big.bin")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("uploaded file mode = %v (%v), want 0750", fi.Mode().Perm(), err)
	}

	back := filepath.Join(local, "back.bin")
	f.mustRun(t, "cp", "box:/data/big.bin", back)
	if got := fileSum(t, back); got != want {
		t.Fatalf("the downloaded file differs: sha256 %x, want %x", got, want)
	}
	if fi, err := os.Stat(back); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("downloaded file mode = %v (%v), want 0750", fi.Mode().Perm(), err)
	}
}

func TestCopyStdioDirectoriesAndErrors(t *testing.T) {
	f := setup(t).withAgents()
	f.sandbox(t, "box")
	root := f.serve(t, "box")
	local := t.TempDir()

	var out, errOut bytes.Buffer
	if code := f.kubox(t, strings.NewReader("from stdin\n"), &out, &errOut, "cp", "-", "box:/in/hello.txt"); code != 0 {
		t.Fatalf("kubox cp - box:/in/hello.txt exited %d: %s", code, errOut.String())
	}
	if b, err := os.ReadFile(filepath.Join(root, "in", "hello.txt")); err != nil || string(b) != "from stdin\n" {
		t.Errorf("the sandbox's /in/hello.txt = %q (%v), want stdin", b, err)
	}
	r := f.mustRun(t, "cp", "box:/in/hello.txt", "-")
	if r.stdout != "from stdin\n" {
		t.Errorf("kubox cp box:/in/hello.txt - printed %q", r.stdout)
	}

	// A directory as DST receives the file under its own name, on both sides.
	if err := os.WriteFile(filepath.Join(local, "notes.txt"), []byte("notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, "cp", filepath.Join(local, "notes.txt"), "box:/in/")
	if b, err := os.ReadFile(filepath.Join(root, "in", "notes.txt")); err != nil || string(b) != "notes" {
		t.Errorf("cp into box:/in/ wrote %q (%v), want /in/notes.txt", b, err)
	}
	sub := filepath.Join(local, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, "cp", "box:/in/hello.txt", sub)
	if b, err := os.ReadFile(filepath.Join(sub, "hello.txt")); err != nil || string(b) != "from stdin\n" {
		t.Errorf("cp into a local directory wrote %q (%v), want sub/hello.txt", b, err)
	}

	tests := map[string]struct {
		args []string
		want string
	}{
		"remote directory": {[]string{"cp", "box:/in", local}, "/in is a directory in the sandbox, and kubox cp copies files"},
		"local directory":  {[]string{"cp", sub, "box:/x"}, sub + " is a directory, and kubox cp copies files"},
		"missing remote":   {[]string{"cp", "box:/nope.txt", local}, "/nope.txt"},
		"missing local":    {[]string{"cp", filepath.Join(local, "nope"), "box:/x"}, "no such file or directory"},
		"stdin into a dir": {[]string{"cp", "-", "box:/in"}, "/in is a directory: name the file to write stdin to"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := f.run(t, tc.args...)
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("kubox %s: exit %d, stderr %q; want 1 and %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
			}
		})
	}
}
