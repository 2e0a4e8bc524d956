package process

// LookPath finds program as Start does for Spec.Argv[0]: a name with a slash is a path (relative
// to dir), anything else is searched in the PATH of env (the image's default PATH when env has
// none). It lets a caller refuse clearly, before starting anything, a program the sandbox lacks.
func LookPath(program string, env []string, dir string) (string, error) {
	return lookPath(program, envPath(env), dir)
}

// PathOf is the PATH that LookPath searches for env.
func PathOf(env []string) string { return envPath(env) }
