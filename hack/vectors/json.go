package main

import (
	"encoding/json"
	"fmt"
)

// jsonObject is obj as the API server would hold it, without the fields Go writes empty (null
// creationTimestamp, empty status parts): what the SDKs read and build.
func jsonObject(obj any) map[string]any {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("marshalling %T: %v", obj, err))
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("unmarshalling %T: %v", obj, err))
	}
	prune(m)
	return m
}

// prune deletes, depth first, the nulls, empty strings, empty lists and empty objects of m.
func prune(m map[string]any) {
	for k, v := range m {
		if empty(v) {
			delete(m, k)
		}
	}
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		prune(x)
		return len(x) == 0
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				prune(m)
			}
		}
		return len(x) == 0
	}
	return false
}
