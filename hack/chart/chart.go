package main

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// The objects of config/default the chart templates beyond the namespace and labels. The
// generator fails, naming the object, when one of them is missing or has a shape it does not
// know, rather than writing a chart that silently drops a setting.
const (
	controllerDeployment = "kubox-controller"
	routerDeployment     = "kubox-router"
	egressDeployment     = "kubox-egress"
	controllerConfigMap  = "kubox-controller-config"
	controllerConfigKey  = "config.yaml"
	routerService        = "sandbox-router-svc"
	routerServicePort    = "http"
	// keySecret is the Secret both Deployments mount: the key the controller derives sandboxes'
	// agent tokens from and the router checks them with. config/default expects it to exist; the
	// chart creates it (templates/secret-kubox-agent-token-key.yaml) unless told to use another.
	keySecret = "kubox-agent-token-key"
)

// components maps config/default's Deployments to their section of values.yaml.
var components = map[string]string{controllerDeployment: "controller", routerDeployment: "router", egressDeployment: "egress"}

type object = map[string]any

// image is an image reference split the way values.yaml holds it.
type image struct {
	Repository string
	Tag        string
	PullPolicy string
}

// component is a Deployment's settings in config/default: the defaults of its values section.
type component struct {
	Replicas  any
	Image     image
	Resources object
}

// service is the router Service's settings in config/default.
type service struct {
	Type        string
	Port        any
	Annotations object
}

// chartDefaults is what config/default sets, written into values.yaml as the chart's defaults
// and used by the templates that are not one of config/default's objects.
type chartDefaults struct {
	Namespace       string
	NamespaceLabels map[string]string
	// CommonLabels are the labels every object of config/default has (its kustomization's
	// labels), which the key Secret gets too.
	CommonLabels  map[string]string
	Controller    component
	Router        component
	Egress        component
	RouterService service
	Agent         image
	Config        controllerConfig
	// KeyFile is the key's entry in the key Secret (the file name the Deployments read).
	KeyFile string
	// KeyMounts counts the Deployments that mount the key Secret.
	KeyMounts int
	// Node is what config/node sets, when the chart templates it (node.go).
	Node *nodeDefaults
}

// generate returns the chart's files, by path relative to the chart folder, from the output of
// kustomize on config/default, the CRD files of config/crd/bases and, when not nil, the output of
// kustomize on config/node.
func generate(rendered []byte, crds map[string][]byte, node []byte) (map[string][]byte, error) {
	objs, err := parseObjects(rendered)
	if err != nil {
		return nil, err
	}
	g := &generator{ph: placeholders{}, files: map[string][]byte{}}
	if err := g.collect(objs, crds); err != nil {
		return nil, err
	}
	for _, o := range objs {
		if kind(o) == "Namespace" || kind(o) == "CustomResourceDefinition" {
			continue
		}
		if err := g.template(o); err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind(o), name(o), err)
		}
	}
	if err := g.check(); err != nil {
		return nil, err
	}
	if node != nil {
		if err := g.node(node); err != nil {
			return nil, fmt.Errorf("config/node: %w", err)
		}
	}
	for file, b := range crds {
		g.files["crds/"+file] = b
	}
	if err := g.static(); err != nil {
		return nil, err
	}
	return g.files, nil
}

type generator struct {
	d     chartDefaults
	ph    placeholders
	files map[string][]byte
	// seen records the objects of config/default the generator templates specially.
	seen map[string]bool
}

// collect finds the namespace, the labels every object shares and the CRDs, and checks that the
// CRDs kustomize renders are the files copied to crds/.
func (g *generator) collect(objs []object, crds map[string][]byte) error {
	var rendered, copied []string
	first := true
	for _, o := range objs {
		switch kind(o) {
		case "Namespace":
			if g.d.Namespace != "" {
				return fmt.Errorf("config/default has two Namespaces, %s and %s; the chart installs into one (the release's)", g.d.Namespace, name(o))
			}
			g.d.Namespace = name(o)
			g.d.NamespaceLabels = stringMap(field(o, "metadata", "labels"))
		case "CustomResourceDefinition":
			rendered = append(rendered, name(o))
			continue
		}
		labels := stringMap(field(o, "metadata", "labels"))
		if first {
			g.d.CommonLabels, first = labels, false
			continue
		}
		for k, v := range g.d.CommonLabels {
			if labels[k] != v {
				delete(g.d.CommonLabels, k)
			}
		}
	}
	if g.d.Namespace == "" {
		return fmt.Errorf("config/default has no Namespace; the generator needs it to know which namespace to replace with the release's")
	}
	for file, b := range crds {
		var crd object
		if err := yaml.Unmarshal(b, &crd); err != nil {
			return fmt.Errorf("CRD file %s: %w", file, err)
		}
		copied = append(copied, name(crd))
	}
	sort.Strings(rendered)
	sort.Strings(copied)
	if strings.Join(rendered, ",") != strings.Join(copied, ",") {
		return fmt.Errorf("config/default renders the CRDs %v but config/crd/bases holds %v; the chart's crds/ is a copy of config/crd/bases", rendered, copied)
	}
	return nil
}

// template writes the template of one object of config/default.
func (g *generator) template(o object) error {
	meta, ok := o["metadata"].(object)
	if !ok {
		return fmt.Errorf("no metadata")
	}
	if ns, ok := meta["namespace"]; ok {
		if ns != g.d.Namespace {
			return fmt.Errorf("namespace %v is not config/default's %s; the chart installs into one namespace", ns, g.d.Namespace)
		}
		meta["namespace"] = g.ph.add(inline("namespace", "{{ .Release.Namespace }}"))
	}
	meta["labels"] = g.ph.add(labels(meta["labels"]))

	var err error
	switch kind(o) {
	case "Deployment":
		err = g.deployment(o)
	case "ConfigMap":
		if name(o) == controllerConfigMap {
			err = g.configMap(o)
		}
	case "Service":
		if name(o) == routerService {
			err = g.service(o)
		}
	case "RoleBinding", "ClusterRoleBinding":
		subjects, _ := o["subjects"].([]any)
		for _, s := range subjects {
			if s, ok := s.(object); ok && s["namespace"] == g.d.Namespace {
				s["namespace"] = g.ph.add(inline("namespace", "{{ .Release.Namespace }}"))
			}
		}
	}
	if err != nil {
		return err
	}
	text, err := g.render(o)
	if err != nil {
		return err
	}
	g.files[templateFile(kind(o), name(o))] = text
	return nil
}

// render marshals o and replaces its placeholders with Helm template text.
func (g *generator) render(o object) ([]byte, error) {
	b, err := yaml.Marshal(o)
	if err != nil {
		return nil, err
	}
	text, err := g.ph.expand(string(b))
	if err != nil {
		return nil, err
	}
	if strings.Contains(text, g.d.Namespace) {
		return nil, fmt.Errorf("names the namespace %s in a field the generator does not template; teach hack/chart that field", g.d.Namespace)
	}
	return []byte(generatedHeader + text), nil
}

// deployment templates the replicas, image, pull policy and resources of a Deployment's one
// container, and the name of the key Secret it mounts.
func (g *generator) deployment(o object) error {
	c, ok := components[name(o)]
	if !ok {
		return fmt.Errorf("the chart knows the Deployments %v only; add this one to hack/chart's components and values", keys(components))
	}
	g.see("Deployment/" + name(o))
	values := ".Values." + c
	spec, _ := o["spec"].(object)
	pod, _ := field(o, "spec", "template", "spec").(object)
	if spec == nil || pod == nil {
		return fmt.Errorf("no spec.template.spec")
	}
	_, img, resources, err := g.templateContainer(pod, values)
	if err != nil {
		return err
	}
	comp := component{Replicas: spec["replicas"], Image: img, Resources: resources}
	if comp.Replicas == nil {
		comp.Replicas = 1
	}
	switch c {
	case "controller":
		g.d.Controller = comp
	case "router":
		g.d.Router = comp
	default:
		g.d.Egress = comp
	}

	spec["replicas"] = g.ph.add(inline("replicas", "{{ "+values+".replicas }}"))

	volumes, _ := pod["volumes"].([]any)
	for _, v := range volumes {
		v, _ := v.(object)
		if s, ok := v["secret"].(object); ok && s["secretName"] == keySecret {
			s["secretName"] = g.ph.add(inline("secretName", `{{ include "kubox.agentTokenKeySecret" . }}`))
			g.d.KeyMounts++
		}
		if cm, ok := v["configMap"].(object); ok && cm["name"] == controllerConfigMap {
			// Roll the Pods when the configuration changes: the controller reads it at start-up.
			tmeta, _ := field(o, "spec", "template", "metadata").(object)
			if tmeta == nil {
				return fmt.Errorf("no spec.template.metadata")
			}
			ann, _ := tmeta["annotations"].(object)
			if ann == nil {
				ann = object{}
				tmeta["annotations"] = ann
			}
			ann["checksum/config"] = g.ph.add(inline("checksum/config",
				`{{ include (print $.Template.BasePath "/`+path.Base(templateFile("ConfigMap", controllerConfigMap))+`") . | sha256sum }}`))
		}
	}
	return nil
}

// templateContainer templates the image, pull policy, resources and flags of the one container
// of pod from the values below values (".Values.router"), and returns the container with
// config/'s image and resources, the defaults of those values.
func (g *generator) templateContainer(pod object, values string) (object, image, object, error) {
	containers, _ := pod["containers"].([]any)
	if len(containers) != 1 {
		return nil, image{}, nil, fmt.Errorf("has %d containers; the chart's values hold the image of exactly one", len(containers))
	}
	ctr, _ := containers[0].(object)
	ref, _ := ctr["image"].(string)
	img, err := splitImage(ref)
	if err != nil {
		return nil, image{}, nil, err
	}
	img.PullPolicy, _ = ctr["imagePullPolicy"].(string)
	resources, ok := ctr["resources"].(object)
	if !ok {
		resources = object{}
	}
	ctr["image"] = g.ph.add(inline("image", `{{ include "kubox.image" `+values+`.image | quote }}`))
	ctr["imagePullPolicy"] = g.ph.add(optional(values+".image.pullPolicy", inline("imagePullPolicy", "{{ . }}")))
	ctr["resources"] = g.ph.add(block("resources", "toYaml "+values+".resources"))
	if args, ok := ctr["args"].([]any); ok {
		ctr["args"] = g.ph.add(withExtraArgs(args, values+".extraArgs"))
	}
	return ctr, img, resources, nil
}

// configMap replaces the controller's ControllerConfiguration with the one values.yaml holds.
func (g *generator) configMap(o object) error {
	g.see("ConfigMap/" + name(o))
	data, _ := o["data"].(object)
	text, ok := data[controllerConfigKey].(string)
	if !ok || len(data) != 1 {
		return fmt.Errorf("the chart expects exactly one entry, %s, in data", controllerConfigKey)
	}
	cfg, err := parseControllerConfig(text)
	if err != nil {
		return fmt.Errorf("data[%s]: %w", controllerConfigKey, err)
	}
	g.d.Config = cfg
	g.d.Agent = cfg.Agent
	g.d.KeyFile = path.Base(cfg.TokenKeyFile)
	o["data"] = g.ph.add(func(ind string) string {
		return ind + "data:\n" +
			ind + "  " + controllerConfigKey + ": |\n" +
			ind + `    {{- include "kubox.controllerConfig" . | nindent ` + fmt.Sprint(len(ind)+4) + " }}"
	})
	return nil
}

// service templates the router Service's type, port and annotations (how the router is exposed).
func (g *generator) service(o object) error {
	g.see("Service/" + name(o))
	spec, _ := o["spec"].(object)
	meta, _ := o["metadata"].(object)
	s := service{Type: "ClusterIP", Annotations: object{}}
	if t, ok := spec["type"].(string); ok {
		s.Type = t
	}
	if a, ok := meta["annotations"].(object); ok {
		s.Annotations = a
	}
	ports, _ := spec["ports"].([]any)
	for _, p := range ports {
		if p, ok := p.(object); ok && p["name"] == routerServicePort {
			s.Port = p["port"]
			p["port"] = g.ph.add(inline("port", "{{ .Values.router.service.port }}"))
		}
	}
	if s.Port == nil {
		return fmt.Errorf("no port named %s", routerServicePort)
	}
	g.d.RouterService = s
	spec["type"] = g.ph.add(inline("type", "{{ .Values.router.service.type }}"))
	meta["annotations"] = g.ph.add(optional(".Values.router.service.annotations", block("annotations", "toYaml .")))
	return nil
}

func (g *generator) see(key string) {
	if g.seen == nil {
		g.seen = map[string]bool{}
	}
	g.seen[key] = true
}

// check fails when an object the chart's values refer to was not in config/default.
func (g *generator) check() error {
	var missing []string
	for _, key := range []string{
		"Deployment/" + controllerDeployment, "Deployment/" + routerDeployment,
		"ConfigMap/" + controllerConfigMap, "Service/" + routerService,
	} {
		if !g.seen[key] {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("config/default has no %s; the chart's values refer to them (hack/chart)", strings.Join(missing, ", "))
	}
	if g.d.KeyMounts == 0 {
		return fmt.Errorf("no Deployment of config/default mounts the Secret %s; the chart would create a key nothing reads", keySecret)
	}
	return nil
}

// splitImage splits an image reference into repository and tag (latest when it has none).
func splitImage(ref string) (image, error) {
	if ref == "" {
		return image{}, fmt.Errorf("container has no image")
	}
	if strings.Contains(ref, "@") {
		return image{}, fmt.Errorf("image %s is pinned by digest; values.yaml holds a repository and a tag", ref)
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return image{Repository: ref, Tag: "latest"}, nil
	}
	return image{Repository: ref[:i], Tag: ref[i+1:]}, nil
}

// templateFile is the chart file of the object of that kind and name.
func templateFile(kind, name string) string {
	return "templates/" + strings.ToLower(kind) + "-" + name + ".yaml"
}

// parseObjects splits kustomize's output into objects.
func parseObjects(rendered []byte) ([]object, error) {
	var objs []object
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(rendered), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, fmt.Errorf("parsing kustomize's output: %w", err)
		}
		if o == nil {
			continue // comments only
		}
		if kind(o) == "" || name(o) == "" {
			return nil, fmt.Errorf("kustomize's output has an object without kind or metadata.name")
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("kustomize rendered no objects")
	}
	return objs, nil
}

func kind(o object) string { s, _ := o["kind"].(string); return s }
func name(o object) string { s, _ := field(o, "metadata", "name").(string); return s }
func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// field returns the value at the path of map keys in o, nil when there is none.
func field(o object, path ...string) any {
	var v any = o
	for _, p := range path {
		m, ok := v.(object)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func stringMap(v any) map[string]string {
	out := map[string]string{}
	m, _ := v.(object)
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// placeholders stands in for template text while an object goes through the YAML encoder: a
// field's value is set to a token, and expand replaces each line "key: token" with the text of
// its lineFunc, indented like the line.
type placeholders map[string]lineFunc

// lineFunc writes the template text that replaces the line of a field, each line starting with
// ind (the field's indentation), without a final newline.
type lineFunc func(ind string) string

func (p placeholders) add(f lineFunc) string {
	token := fmt.Sprintf("KUBOXHELM%04d", len(p))
	p[token] = f
	return token
}

var placeholderLine = regexp.MustCompile(`^( *)(- )?[^ :]+: (KUBOXHELM\d{4})$`)

func (p placeholders) expand(text string) (string, error) {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		m := placeholderLine.FindStringSubmatch(l)
		if m == nil {
			if strings.Contains(l, "KUBOXHELM") {
				return "", fmt.Errorf("placeholder in an unexpected place: %q", l)
			}
			continue
		}
		if m[2] == "" {
			lines[i] = p[m[3]](m[1])
			continue
		}
		// A list item's first field: its text is written at the item's fields' indentation,
		// and the first line gets the "- " back, which only a field line (not a template
		// action) can take.
		ind := m[1] + "  "
		text := p[m[3]](ind)
		if !strings.HasPrefix(text, ind) || strings.HasPrefix(text[len(ind):], "{{") {
			return "", fmt.Errorf("placeholder on a list item's first field whose template starts with an action: %q", l)
		}
		lines[i] = m[1] + "- " + text[len(ind):]
	}
	return strings.Join(lines, "\n"), nil
}

func inline(key, expr string) lineFunc {
	return func(ind string) string { return ind + key + ": " + expr }
}

// block is a field whose value is the YAML expr writes, indented under the key.
func block(key, expr string) lineFunc {
	return func(ind string) string {
		return fmt.Sprintf("%s%s:\n%s  {{- %s | nindent %d }}", ind, key, ind, expr, len(ind)+2)
	}
}

// withExtraArgs writes args, config/default's flags, followed by the list extra of values.yaml.
func withExtraArgs(args []any, extra string) lineFunc {
	return func(ind string) string {
		var b strings.Builder
		b.WriteString(ind + "args:")
		for _, a := range args {
			fmt.Fprintf(&b, "\n%s- %s", ind, strconv.Quote(fmt.Sprint(a)))
		}
		fmt.Fprintf(&b, "\n%s{{- range %s }}\n%s- {{ . | quote }}\n%s{{- end }}", ind, extra, ind, ind)
		return b.String()
	}
}

// optional writes the field of body only when cond is set, with . bound to cond.
func optional(cond string, body lineFunc) lineFunc {
	return func(ind string) string {
		return ind + "{{- with " + cond + " }}\n" + body(ind) + "\n" + ind + "{{- end }}"
	}
}

// labels keeps config/default's labels of an object and adds Helm's (kubox.labels).
func labels(v any) lineFunc {
	m := stringMap(v)
	return func(ind string) string {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%slabels:\n%s  {{- include \"kubox.labels\" . | nindent %d }}", ind, ind, len(ind)+2)
		for _, k := range keys(m) {
			fmt.Fprintf(&b, "\n%s  %s: %s", ind, k, quote(m[k]))
		}
		return b.String()
	}
}
