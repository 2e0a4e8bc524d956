package usage

import "time"

// SchemaVersion names the Record's JSON form. A change that removes or renames a field gets a
// new version; consumers of the NDJSON in the bucket switch on it.
const SchemaVersion = "kubox.dev/usage/v1"

// Record is one sandbox's usage over its life, written when it is deleted.
type Record struct {
	Schema    string    `json:"schema"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       string    `json:"uid"`
	Claim     string    `json:"claim"`
	Template  string    `json:"template"`
	Pool      string    `json:"pool"`
	Principal string    `json:"principal"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Figures
	// Measured holds what the kubelet measured; nil when no measured source was available for
	// this sandbox. Never filled from requests.
	Measured *Measured `json:"measured"`
}

// Measured are figures read from the kubelet's resource metrics (container_cpu_usage_seconds_total
// and container_memory_working_set_bytes sampled over running time).
type Measured struct {
	CPUSeconds       float64 `json:"cpuSeconds"`
	MemoryGiBSeconds float64 `json:"memoryGiBSeconds"`
	// Samples is how many metric reads the figures come from.
	Samples int64 `json:"samples"`
}
