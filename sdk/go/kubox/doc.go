// Package kubox is the Go SDK of kubox: it claims sandboxes (SandboxClaim) on a Kubernetes
// cluster, runs processes and moves files in them through kubox-agent, suspends, resumes and
// releases them.
//
// The Kubernetes side (claims, sandboxes, their Ready conditions) goes through the API server
// with the caller's rest.Config; the data side (processes, files) goes to the agent in the
// sandbox's Pod, through kubox-router (the default) or straight to the Pod's IP (ConnectDirect).
//
//	cfg, err := config.GetConfig() // sigs.k8s.io/controller-runtime/pkg/client/config
//	if err != nil { ... }
//	c, err := kubox.New(cfg, kubox.Options{Namespace: "default"})
//	if err != nil { ... }
//	defer c.Close()
//
//	sb, err := c.Claim(ctx, kubox.FromPool("python"), kubox.WithTTL(time.Hour))
//	if err != nil { ... } // errors.Is(err, kubox.ErrClaimFailed), kubox.ErrTimeout, ...
//	defer sb.Close(context.Background())
//
//	res, err := sb.Run(ctx, "python3", "-c", "print(6*7)")
//	if err != nil { ... }
//	fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
//
//	p, err := sb.Start(ctx, kubox.Cmd{Shell: "for i in 1 2 3; do echo $i; sleep 1; done",
//		Stdout: os.Stdout, Stderr: os.Stderr})
//	if err != nil { ... }
//	code, err := p.Wait()
//
//	err = sb.Files().WriteFile(ctx, "/tmp/hello.txt", []byte("hi\n"), 0o644)
//	data, err := sb.Files().ReadFile(ctx, "/tmp/hello.txt")
//
// Connections (Options.Connection): ConnectAuto uses Options.RouterURL or $KUBOX_ROUTER_URL
// when set, the router's Service DNS name inside a Pod, and otherwise a port-forward to the
// router through the API server, so a program with only a kubeconfig works unchanged on a
// laptop and in the cluster. See docs/sdk-go.md for the RBAC each call needs.
package kubox
