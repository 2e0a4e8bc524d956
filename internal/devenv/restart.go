package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RestartContainerd stops the local node's containerd and starts it again with the same command
// line, as `systemctl restart containerd` does on a stock node, and waits until it answers: the
// restart command kubox-node install runs on the local node (`kubox dev restart-containerd`),
// whose containerd is a host process of `kubox dev up`, not a systemd unit. Run from a Pod (the
// installer's init container, through nsenter into a host process's mount namespace), it first leaves the Pod's
// cgroups for PID 1's, so that the new containerd outlives the container that restarted it.
func RestartContainerd(ctx context.Context, c Config, out io.Writer) error {
	p, l := NewProgress(out), NewLayout(c.StateDir)
	old, ok, err := ReadPidFile(l.PidFile(Containerd))
	if err != nil {
		return err
	}
	if !ok || !old.Alive() {
		return fmt.Errorf("containerd of %s is not running: start the environment with kubox dev up", c.StateDir)
	}
	argv, err := cmdline(old.PID)
	if err != nil {
		return fmt.Errorf("read containerd's command line (pid %d): %w", old.PID, err)
	}
	if err := joinCgroups(1, "/sys/fs/cgroup"); err != nil {
		return fmt.Errorf("leave the caller's cgroups for PID 1's: %w", err)
	}
	if err := old.Stop(30 * time.Second); err != nil {
		return fmt.Errorf("stop containerd: %w", err)
	}
	proc, err := Start(l, Component{Containerd, argv}, nil)
	if err != nil {
		return err
	}
	ctr := filepath.Join(filepath.Dir(argv[0]), "ctr")
	err = Poll(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		if !proc.Alive() {
			return false, errExited
		}
		_, err := ctrRunContext(ctx, ctr, l, "version")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("containerd after its restart: %w; last lines of %s:\n%s", err, l.LogFile(Containerd), LogTail(l, Containerd, 20))
	}
	p.Say("containerd restarted (pid %d, was %d)", proc.PID, old.PID)
	return nil
}

func cmdline(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	argv := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("empty command line")
	}
	return argv, nil
}

// joinCgroups moves this process into the cgroups of pid, in every hierarchy mounted below root
// (cgroup v1 controllers, name=systemd, the v2 unified tree) that it finds.
func joinCgroups(pid int, root string) error {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return err
	}
	self := []byte(strconv.Itoa(os.Getpid()))
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, dir := range pidCgroupDirs(root, f[1], f[2]) {
			procs := filepath.Join(dir, "cgroup.procs")
			if _, err := os.Stat(procs); err != nil {
				continue
			}
			if err := os.WriteFile(procs, self, 0o644); err != nil {
				return fmt.Errorf("%s: %w", procs, err)
			}
			break
		}
	}
	return nil
}

// pidCgroupDirs are where the hierarchy of controllers (a /proc/<pid>/cgroup field) holding path
// may be mounted below root.
func pidCgroupDirs(root, controllers, path string) []string {
	if controllers == "" { // the v2 unified hierarchy
		return []string{filepath.Join(root, "unified", path), filepath.Join(root, path)}
	}
	return []string{filepath.Join(root, strings.TrimPrefix(controllers, "name="), path)}
}
