// Command chart writes the Helm chart charts/kubox from config/, so that the kustomize manifests
// stay the one source of truth and the chart is a build product of them (make chart).
//
// It renders config/default with kustomize (kubectl kustomize, from the tool cache), replaces the
// fields a chart user sets (images, replicas, resources, the router Service's exposure, the
// namespace, the controller's ControllerConfiguration) with Helm expressions, writes one template
// per object, copies the CRDs from config/crd/bases to crds/ and writes values.yaml with config/'s
// settings as the defaults. The key Secret that config/default expects the user to create is the
// one object the chart adds: Helm can make a random key on install and keep it on upgrade.
//
//	go run ./hack/chart -kubectl "$(hack/tools/install.sh dir kubernetes)/kubectl" -out charts/kubox
//
// The output folder's generated parts (templates/, crds/ and the top-level files) are replaced as a
// whole, so an object removed from config/ disappears from the chart too. make verify fails when
// the committed chart differs from what this command writes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

func main() {
	kubectl := flag.String("kubectl", "", "kubectl binary whose kustomize renders -config (make chart passes the tool cache's)")
	config := flag.String("config", "config/default", "kustomization to render")
	node := flag.String("node", "", "kustomization of kubox-node (config/node), templated behind node.enabled; empty leaves it out")
	crds := flag.String("crds", "config/crd/bases", "folder of the CRDs copied to the chart's crds/")
	out := flag.String("out", "charts/kubox", "chart folder to write")
	flag.Parse()
	if *kubectl == "" {
		fmt.Fprintln(os.Stderr, "chart: -kubectl is required (make chart passes the tool cache's kubectl; run make tools first)")
		os.Exit(2)
	}
	if err := run(*kubectl, *config, *node, *crds, *out); err != nil {
		fmt.Fprintf(os.Stderr, "chart: %v\n", err)
		os.Exit(1)
	}
}

func run(kubectl, config, nodeConfig, crdDir, out string) error {
	rendered, err := kustomize(kubectl, config)
	if err != nil {
		return err
	}
	var node []byte
	if nodeConfig != "" {
		if node, err = kustomize(kubectl, nodeConfig); err != nil {
			return err
		}
	}
	crds, err := readCRDs(crdDir)
	if err != nil {
		return err
	}
	files, err := generate(rendered, crds, node)
	if err != nil {
		return fmt.Errorf("generating the chart from %s and %s: %w", config, nodeConfig, err)
	}
	return write(out, files)
}

// kustomize renders the kustomization in dir with kubectl's built-in kustomize.
func kustomize(kubectl, dir string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s kustomize %s: %w: %s", kubectl, dir, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}

// readCRDs reads every .yaml file of dir, by file name.
func readCRDs(dir string) (map[string][]byte, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no CRDs in %s; run make manifests", dir)
	}
	crds := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		crds[filepath.Base(p)] = b
	}
	return crds, nil
}

// write replaces the generated parts of the chart folder out with files (paths relative to out).
func write(out string, files map[string][]byte) error {
	for _, p := range []string{"templates", "crds"} {
		if err := os.RemoveAll(filepath.Join(out, p)); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(out, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
