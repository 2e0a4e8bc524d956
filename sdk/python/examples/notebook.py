# %% [markdown]
# # Run an agent's code in a kubox sandbox
#
# What an agent framework's "execute code" tool does: claim a warm sandbox, write the code the
# model produced into it, run it, read back what it wrote, and release the sandbox. Each `# %%`
# cell runs on its own in Jupyter or VS Code; the whole file runs as a script:
#
#     export KUBECONFIG=/var/lib/kubox-dev/kubeconfig     # after `make dev`
#     /usr/bin/python3 sdk/python/examples/notebook.py --pool python
#
# It needs a SandboxWarmPool (the sample: `kubectl apply -f config/samples/python-template.yaml
# -f config/samples/python-warmpool.yaml`) and, outside the cluster, kubox-router's URL: `make dev`
# writes it into the kubeconfig; elsewhere set $KUBOX_ROUTER_URL or let the SDK port-forward.

# %%
import argparse
import json
import sys

from kubox import ClaimFailedError, CommandResult, Sandbox

ap = argparse.ArgumentParser(description="claim, write a file, run it, read the result, release")
ap.add_argument("--pool", default="python", help="the SandboxWarmPool to claim from")
ap.add_argument("--namespace", default=None, help="default: the kubeconfig context's namespace")
args, _ = ap.parse_known_args()

# %% [markdown]
# ## 1. Claim a sandbox
# From a warm pool this takes tens of milliseconds. `ttl` is the safety net: the claim and its
# sandbox are deleted after 10 minutes even if this program dies before `close()`.

# %%
try:
    sb = Sandbox.claim(pool=args.pool, namespace=args.namespace, ttl=600, labels={"app": "notebook-example"})
except ClaimFailedError as e:
    sys.exit(f"could not claim a sandbox: {e}")  # e.g. the pool does not exist: the message says how to create it
print(f"claimed sandbox {sb} through claim {sb.claim_name}")

# %% [markdown]
# ## 2. Write the code the agent produced

# %%
code = '''
import json, statistics
values = [3, 1, 4, 1, 5, 9, 2, 6]
result = {"mean": statistics.mean(values), "median": statistics.median(values)}
json.dump(result, open("/tmp/result.json", "w"))
print("computed", len(values), "values")
'''
sb.files.write("/tmp/task.py", code)

# %% [markdown]
# ## 3. Run it
# A non-zero exit is a result, not an exception: hand `stderr` back to the model so it can fix
# its code. `timeout` kills runaway code.

# %%
def run_tool(sandbox: Sandbox, command: str) -> CommandResult:
    """The tool an agent calls: run a command, return its output."""
    return sandbox.run(command, timeout=60)


res = run_tool(sb, "python3 /tmp/task.py")
print(f"exit {res.exit_code}: {res.stdout.strip()} {res.stderr.strip()}")

# %% [markdown]
# ## 4. Read the result back, stream a longer job

# %%
result = json.loads(sb.files.read_text("/tmp/result.json"))
print("result:", result)

proc = sb.start(["python3", "-u", "-c", "import time\nfor i in range(3):\n    print('step', i); time.sleep(0.2)"])
for event in proc:  # lines arrive as they are printed
    if hasattr(event, "text"):
        print("  >", event.text, end="")
print("streamed job exited with", proc.exit.exit_code)

# %% [markdown]
# ## 5. Release
# Deletes the claim; the sandbox and its Pod go with it. (`with Sandbox.claim(...) as sb:` does
# this at the end of the block.)

# %%
sb.close()
print("released")
