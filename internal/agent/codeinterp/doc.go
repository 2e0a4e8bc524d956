// Package codeinterp serves E2B's code-interpreter wire (the server @e2b/code-interpreter's
// Sandbox.runCode talks to on port 49999) from kubox-agent: stateful contexts of Python,
// JavaScript (Node.js) and bash, each one long-lived interpreter process started through the
// agent's process manager, with a small driver embedded in the agent (no Jupyter needed in the
// image). See docs/e2b.md, "The code interpreter".
package codeinterp
