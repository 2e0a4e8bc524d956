// Command files claims a sandbox, uploads a file, runs a program on it, lists and downloads the
// results, and watches a directory.
//
//	cd sdk/go && go run ./examples/files -pool python
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/kubox-dev/kubox/sdk/go/kubox"
)

const script = `import json, sys
data = json.load(open("/work/in.json"))
json.dump({"sum": sum(data)}, open("/work/out/result.json", "w"))
`

func main() {
	ns := flag.String("namespace", "default", "namespace of the claim")
	pool := flag.String("pool", "python", "SandboxWarmPool to claim from")
	router := flag.String("router", os.Getenv(kubox.RouterURLEnv), "kubox-router URL (default: port-forward)")
	conn := flag.String("connection", "", `"" (auto), "router", "direct" or "port-forward"`)
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, err := config.GetConfig()
	if err != nil {
		log.Fatal(err)
	}
	c, err := kubox.New(cfg, kubox.Options{Namespace: *ns, Connection: kubox.Connection(*conn), RouterURL: *router})
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	sb, err := c.Claim(ctx, kubox.FromPool(*pool))
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = sb.Close(context.Background()) }()
	if err := run(ctx, sb); err != nil {
		log.Print(err)
	}
}

func run(ctx context.Context, sb *kubox.Sandbox) error {
	fs := sb.Files()
	if err := fs.MakeDir(ctx, "/work/out"); err != nil {
		return err
	}
	// Watch /work/out while the program writes there.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events, _, err := fs.Watch(wctx, "/work/out", false)
	if err != nil {
		return err
	}
	go func() {
		for ev := range events {
			fmt.Printf("event: %s %s\n", ev.Op, ev.Path)
		}
	}()

	if err := fs.WriteFile(ctx, "/work/in.json", []byte("[1, 2, 3, 4]"), 0o644); err != nil {
		return err
	}
	if err := fs.WriteFile(ctx, "/work/sum.py", []byte(script), 0o755); err != nil {
		return err
	}
	res, err := sb.Run(ctx, "python3", "/work/sum.py")
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("sum.py exited with %d: %s", res.ExitCode, res.Stderr)
	}
	entries, err := fs.List(ctx, "/work/out")
	if err != nil {
		return err
	}
	for _, e := range entries {
		fmt.Printf("%s %8d %s\n", e.Mode, e.Size, e.Path)
	}
	out, err := fs.ReadFile(ctx, "/work/out/result.json")
	if err != nil {
		return err
	}
	fmt.Printf("result: %s\n", out)
	return fs.Remove(ctx, "/work", true)
}
