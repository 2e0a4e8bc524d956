package v1beta1

import "testing"

// The expected hashes are FNV-1a 32-bit test vectors computed outside this code base (the offset
// basis for "", the published value for "a", and values agent-sandbox's own tests pin), so a
// change of algorithm, byte order or formatting fails here rather than being copied into the test.
func TestNameHash(t *testing.T) {
	cases := map[string]string{
		"":             "811c9dc5", // the FNV-1a 32-bit offset basis: no byte hashed
		"a":            "e40c292c",
		"my-sandbox":   "374de8f5",
		"sandbox-name": "ab179450",
		// Leading zero nibbles must be kept: the label is always 8 characters.
		"sandbox-633": "004575dd",
		"sandbox-683": "00614c5a",
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NameHash(name); got != want {
				t.Errorf("NameHash(%q) = %q, want %q", name, got, want)
			}
		})
	}
}

func TestPVCName(t *testing.T) {
	cases := []struct {
		vct, sandbox, want string
	}{
		{vct: "workspace", sandbox: "my-sandbox", want: "workspace-my-sandbox"},
		{vct: "data", sandbox: "a", want: "data-a"},
		// Names with dashes on both sides are joined, not parsed: the order matters.
		{vct: "my-pvc", sandbox: "sandbox-name", want: "my-pvc-sandbox-name"},
	}
	for _, tc := range cases {
		if got := PVCName(tc.vct, tc.sandbox); got != tc.want {
			t.Errorf("PVCName(%q, %q) = %q, want %q", tc.vct, tc.sandbox, got, tc.want)
		}
	}
}

// TestWireKeys pins the label and annotation keys shared with agent-sandbox: renaming one breaks
// every client and object written by agent-sandbox (API.md, "Labels and annotations").
func TestWireKeys(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"SandboxNameHashLabel":            {SandboxNameHashLabel, "agents.x-k8s.io/sandbox-name-hash"},
		"WarmPoolSandboxLabel":            {WarmPoolSandboxLabel, "agents.x-k8s.io/warm-pool-sandbox"},
		"SafeToEvictAnnotation":           {SafeToEvictAnnotation, "cluster-autoscaler.kubernetes.io/safe-to-evict"},
		"SandboxTemplateRefHashLabel":     {SandboxTemplateRefHashLabel, "agents.x-k8s.io/sandbox-template-ref-hash"},
		"SandboxTemplateHashLabel":        {SandboxTemplateHashLabel, "agents.x-k8s.io/sandbox-template-hash"},
		"LaunchTypeLabel":                 {LaunchTypeLabel, "agents.x-k8s.io/launch-type"},
		"CreatedByLabel":                  {CreatedByLabel, "agents.x-k8s.io/created-by"},
		"ClaimUIDLabel":                   {ClaimUIDLabel, "agents.x-k8s.io/claim-uid"},
		"AdoptableLabel":                  {AdoptableLabel, "agents.x-k8s.io/adoptable"},
		"PodNameAnnotation":               {PodNameAnnotation, "agents.x-k8s.io/pod-name"},
		"SandboxTemplateRefAnnotation":    {SandboxTemplateRefAnnotation, "agents.x-k8s.io/sandbox-template-ref"},
		"PropagatedLabelsAnnotation":      {PropagatedLabelsAnnotation, "agents.x-k8s.io/propagated-labels"},
		"PropagatedAnnotationsAnnotation": {PropagatedAnnotationsAnnotation, "agents.x-k8s.io/propagated-annotations"},
		"TraceContextAnnotation":          {TraceContextAnnotation, "opentelemetry.io/trace-context"},
		"SandboxNameLabel":                {SandboxNameLabel, "kubox.dev/sandbox-name"},
		"ForkOfLabel":                     {ForkOfLabel, "kubox.dev/fork-of"},
		"AgentsPrefix":                    {AgentsPrefix, "agents.x-k8s.io/"},
		"ExtensionsPrefix":                {ExtensionsPrefix, "extensions.agents.x-k8s.io/"},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", name, tc.got, tc.want)
		}
	}
}

// TestConditionVocabulary pins the condition types and reasons agent-sandbox clients match on
// (API.md, "Conditions"; inventory 1.7).
func TestConditionVocabulary(t *testing.T) {
	cases := map[string]struct{ got, want string }{
		"SandboxConditionReady":             {SandboxConditionReady, "Ready"},
		"SandboxConditionSuspended":         {SandboxConditionSuspended, "Suspended"},
		"SandboxConditionPodScheduled":      {SandboxConditionPodScheduled, "PodScheduled"},
		"SandboxConditionFinished":          {SandboxConditionFinished, "Finished"},
		"SandboxReasonDependenciesReady":    {SandboxReasonDependenciesReady, "DependenciesReady"},
		"SandboxReasonDependenciesNotReady": {SandboxReasonDependenciesNotReady, "DependenciesNotReady"},
		"SandboxReasonSuspended":            {SandboxReasonSuspended, "SandboxSuspended"},
		"SandboxReasonPodSucceeded":         {SandboxReasonPodSucceeded, "PodSucceeded"},
		"SandboxReasonPodFailed":            {SandboxReasonPodFailed, "PodFailed"},
		"SandboxReasonExpired":              {SandboxReasonExpired, "SandboxExpired"},
		"SandboxReasonMultiplePods":         {SandboxReasonMultiplePods, "MultiplePods"},
		"SandboxReasonReconcilerError":      {SandboxReasonReconcilerError, "ReconcilerError"},
		"SandboxReasonNotSuspended":         {SandboxReasonNotSuspended, "NotSuspended"},
		"SandboxReasonPodTerminated":        {SandboxReasonPodTerminated, "PodTerminated"},
		"SandboxReasonPodTerminating":       {SandboxReasonPodTerminating, "PodTerminating"},
		"SandboxReasonPodNotOwned":          {SandboxReasonPodNotOwned, "PodNotOwned"},
		"SandboxReasonPodStateUnknown":      {SandboxReasonPodStateUnknown, "PodStateUnknown"},
		"SandboxReasonPodScheduled":         {SandboxReasonPodScheduled, "PodScheduled"},
		"SandboxReasonPodSchedulingUnknown": {SandboxReasonPodSchedulingUnknown, "PodSchedulingUnknown"},
		// agent-sandbox v1.0.13 (#2142).
		"SandboxReasonPodAbsent":   {SandboxReasonPodAbsent, "PodAbsent"},
		"SandboxReasonNotFinished": {SandboxReasonNotFinished, "NotFinished"},
	}
	for name, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", name, tc.got, tc.want)
		}
	}
}
