// Package process runs the processes of a sandbox for kubox-agent and serves them as
// kubox.agent.v1.ProcessService (handler.go).
//
// The Manager starts processes (argv or a shell command line, env, working directory, optional
// PTY, timeout), tracks them by an agent-assigned id, and keeps each one's most recent output in a
// bounded replay buffer with per-stream byte offsets. Followers (the StartProcess stream and any
// AttachProcess stream) read that buffer at their own pace: a process never waits for a client,
// and a client that falls more than the buffer behind is told which bytes it lost. Run captures up
// to a cap per stream synchronously instead, so it never loses what it returns.
//
// Every process runs in its own process group (a PTY process leads its own session), and signals,
// timeouts and Shutdown address the group, so the children a shell started go too. What the agent
// ends itself (a timeout, a call that ended: Process.Stop) it ends gracefully: SIGTERM to the
// group, then SIGKILL to the group after Options.StopGrace if a member still runs, even once the
// process itself has exited. Shutdown sends SIGTERM to every group and SIGKILL after
// Options.ShutdownGrace to the processes still running. A client's Signal is sent as asked.
//
// # Waiting for children
//
// One reaper per OS process waits for every child of the agent (reaper_linux.go). No code in the
// agent may call exec.Cmd.Wait, exec.Cmd.Run, exec.Cmd.Output or os.Process.Wait: the reaper's
// wait would take their statuses (and theirs the reaper's). Nor may anything ignore SIGCHLD
// (signal.Ignore), which makes the kernel discard the statuses. Code that needs to run a command
// uses the Manager. Processes are started with syscall.ForkExec on files the Manager owns (os.Pipe, a
// PTY master opened non-blocking), and the Manager closes the agent's ends itself: after the exit
// it reads what is left in the pipes and then reports the exit, so the last output is never lost.
//
// As PID 1 of the sandbox container the agent inherits every orphan in the container; as any other
// pid it makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER) so orphaned grandchildren
// are re-parented to it rather than escaping to PID 1. Either way the reaper reaps them and drops
// their statuses, so no zombies accumulate.
//
// # The main process
//
// kubox-agent is the sandbox container's entry point (`kubox-agent [flags] -- command...`) and runs
// the container's original command as a child with StartMain: its standard files are the agent's,
// so its output is the container log. What happens when it exits is the caller's choice (see
// StartMain); a sandbox keeps serving by default.
package process
