package main

import (
	"fmt"
	"strings"
)

// The objects of config/node (kubox-node, docs/install.md) that the chart templates behind the
// value node.enabled, and the node token Secret it creates for them.
const (
	nodeDaemonSet   = "kubox-node"
	nodeTokenSecret = "kubox-node-token"
	nodeTokenKey    = "token"
)

// nodeDefaults is what config/node sets: the defaults of values.yaml's node section.
type nodeDefaults struct {
	Namespace string
	Image     image
	Resources object
}

// node templates config/node's Namespace and DaemonSet, each behind node.enabled, in the namespace
// node.namespace (not the release's: kubox-node runs privileged), and adds the node token Secret.
func (g *generator) node(rendered []byte) error {
	objs, err := parseObjects(rendered)
	if err != nil {
		return err
	}
	var ns, ds object
	var identity []object
	for _, o := range objs {
		switch {
		case kind(o) == "Namespace" && ns == nil:
			ns = o
		case kind(o) == "DaemonSet" && name(o) == nodeDaemonSet && ds == nil:
			ds = o
		case nodeIdentityKinds[kind(o)] && name(o) == nodeDaemonSet, kind(o) == "RuntimeClass" && name(o) == nodeRuntimeClass:
			identity = append(identity, o)
		default:
			return fmt.Errorf("has %s %s; the chart knows one Namespace, the DaemonSet %s and its ServiceAccount, Role, "+
				"RoleBinding, ClusterRole and ClusterRoleBinding, and the RuntimeClass %s only (hack/chart/node.go)",
				kind(o), name(o), nodeDaemonSet, nodeRuntimeClass)
		}
	}
	if ns == nil || ds == nil {
		return fmt.Errorf("needs a Namespace and the DaemonSet %s", nodeDaemonSet)
	}
	g.d.Node = &nodeDefaults{Namespace: name(ns)}
	nsFile := templateFile("Namespace", name(ns))
	ns["metadata"].(object)["name"] = g.ph.add(inline("name", "{{ .Values.node.namespace }}"))
	ns["metadata"].(object)["labels"] = g.ph.add(labels(field(ns, "metadata", "labels")))
	if err := g.nodeTemplate(ns, nsFile, "and .Values.node.enabled .Values.node.createNamespace"); err != nil {
		return err
	}
	if err := g.daemonSet(ds); err != nil {
		return fmt.Errorf("DaemonSet %s: %w", nodeDaemonSet, err)
	}
	if err := g.nodeTemplate(ds, templateFile("DaemonSet", nodeDaemonSet), ".Values.node.enabled"); err != nil {
		return err
	}
	for _, o := range identity {
		if err := g.nodeIdentity(o); err != nil {
			return fmt.Errorf("%s %s: %w", kind(o), name(o), err)
		}
	}
	g.files[templateFile("Secret", nodeTokenSecret)] = []byte(nodeTokenSecretYAML)
	return nil
}

// nodeIdentityKinds are the kinds of kubox-node's own identity in config/node (its ServiceAccount,
// the Role and RoleBinding that let it read and create its manifest key Secret, and the ClusterRole
// and ClusterRoleBinding that let "kubox-node install" label its Node).
var nodeIdentityKinds = map[string]bool{"ServiceAccount": true, "Role": true, "RoleBinding": true,
	"ClusterRole": true, "ClusterRoleBinding": true}

// nodeRuntimeClass is the RuntimeClass of the runtime handler "kubox-node install" registers.
const nodeRuntimeClass = "kubox-runsc"

// clusterScoped are the kinds of config/node that have no namespace.
var clusterScoped = map[string]bool{"ClusterRole": true, "ClusterRoleBinding": true, "RuntimeClass": true}

// nodeIdentity templates one object of kubox-node's identity behind node.enabled, in
// node.namespace, a RoleBinding's subjects of config/node's namespace moved with it.
func (g *generator) nodeIdentity(o object) error {
	if clusterScoped[kind(o)] {
		meta, _ := o["metadata"].(object)
		meta["labels"] = g.ph.add(labels(meta["labels"]))
	} else if err := g.inNodeNamespace(o); err != nil {
		return err
	}
	subjects, _ := o["subjects"].([]any)
	for _, s := range subjects {
		if s, ok := s.(object); ok && s["namespace"] == g.d.Node.Namespace {
			s["namespace"] = g.ph.add(inline("namespace", "{{ .Values.node.namespace }}"))
		}
	}
	return g.nodeTemplate(o, templateFile(kind(o), name(o)), ".Values.node.enabled")
}

// inNodeNamespace templates the namespace (node.namespace) and labels of o, an object of
// config/node's Namespace.
func (g *generator) inNodeNamespace(o object) error {
	meta, _ := o["metadata"].(object)
	if meta["namespace"] != g.d.Node.Namespace {
		return fmt.Errorf("namespace %v is not config/node's Namespace %s", meta["namespace"], g.d.Node.Namespace)
	}
	meta["namespace"] = g.ph.add(inline("namespace", "{{ .Values.node.namespace }}"))
	meta["labels"] = g.ph.add(labels(meta["labels"]))
	return nil
}

// daemonSet templates the namespace, image, pull policy, resources, flags and extra volumes of the
// DaemonSet's one container.
func (g *generator) daemonSet(o object) error {
	if err := g.inNodeNamespace(o); err != nil {
		return err
	}
	pod, _ := field(o, "spec", "template", "spec").(object)
	ref := mainImage(pod)
	ctr, img, resources, err := g.templateContainer(pod, ".Values.node")
	if err != nil {
		return err
	}
	g.d.Node.Image, g.d.Node.Resources = img, resources
	if err := initContainers(pod, ctr, ref); err != nil {
		return err
	}
	mounts, _ := ctr["volumeMounts"].([]any)
	ctr["volumeMounts"] = g.ph.add(withExtra("volumeMounts", mounts, ".Values.node.extraVolumeMounts"))
	volumes, _ := pod["volumes"].([]any)
	pod["volumes"] = g.ph.add(withExtra("volumes", volumes, ".Values.node.extraVolumes"))
	return nil
}

// nodeTemplate writes file, the template of an object of config/node, rendered only when cond
// holds.
func (g *generator) nodeTemplate(o object, file, cond string) error {
	text, err := g.render(o)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	body := strings.TrimPrefix(string(text), generatedHeader)
	g.files[file] = []byte(nodeHeader + "{{- if " + cond + " }}\n" + body + "{{- end }}\n")
	return nil
}

// withExtra writes the list key, config/node's items followed by those of values.yaml's extra.
func withExtra(key string, items []any, extra string) lineFunc {
	return func(ind string) string {
		b, err := yamlBlock(len(ind), items)
		if err != nil {
			panic(err) // items came from YAML
		}
		return fmt.Sprintf("%s%s:%s\n%s{{- with %s }}\n%s{{- toYaml . | nindent %d }}\n%s{{- end }}",
			ind, key, b, ind, extra, ind, len(ind), ind)
	}
}

const nodeHeader = "# Generated by hack/chart from config/node (make chart); edit config/, not this file.\n"

// nodeTokenSecretYAML is the Secret kubox-node-token in the release's namespace (the controller's
// Deployment mounts it, optionally) and in node.namespace (kubox-node's DaemonSet mounts it), with
// one random token kept on upgrade.
const nodeTokenSecretYAML = nodeHeader + `# The node token kubox-node requires and the controller presents (docs/install.md), in both
# namespaces: made with a random value on install and read back (lookup) on upgrade.
{{- if .Values.node.enabled }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace "` + nodeTokenSecret + `" }}
{{- $token := "" }}
{{- if and $existing $existing.data }}
{{- $token = index $existing.data "` + nodeTokenKey + `" | default "" }}
{{- end }}
{{- $token = $token | default (randAlphaNum 48 | b64enc) }}
{{- range $ns := list .Release.Namespace .Values.node.namespace }}
---
apiVersion: v1
kind: Secret
metadata:
  labels:
    {{- include "kubox.labels" $ | nindent 4 }}
    app.kubernetes.io/part-of: kubox
  name: ` + nodeTokenSecret + `
  namespace: {{ $ns }}
type: Opaque
data:
  ` + nodeTokenKey + `: {{ $token }}
{{- end }}
{{- end }}
`

// initContainers gives the DaemonSet's init containers (kubox-node install) node.image and its
// pull policy: they run the DaemonSet's own image (ref, config/node's), never another.
func initContainers(pod, ctr object, ref string) error {
	inits, _ := pod["initContainers"].([]any)
	for _, c := range inits {
		ic, _ := c.(object)
		if ic["image"] != ref {
			return fmt.Errorf("init container %v runs %v, not the DaemonSet's image %s", ic["name"], ic["image"], ref)
		}
		ic["image"], ic["imagePullPolicy"] = ctr["image"], ctr["imagePullPolicy"]
	}
	return nil
}

// mainImage is the image of the pod's first container.
func mainImage(pod object) string {
	containers, _ := pod["containers"].([]any)
	if len(containers) == 0 {
		return ""
	}
	ctr, _ := containers[0].(object)
	ref, _ := ctr["image"].(string)
	return ref
}
