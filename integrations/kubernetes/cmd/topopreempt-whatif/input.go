// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"sigs.k8s.io/yaml"
)

// badInput is an input error: it names the object (kind namespace/name) and the field. It
// makes the tool exit 2.
type badInput struct{ msg string }

func (e *badInput) Error() string { return e.msg }

func bad(format string, args ...any) error { return &badInput{msg: fmt.Sprintf(format, args...)} }

// objects are the API objects of one kubectl List (or of a manifest file), by kind.
type objects struct {
	Nodes     []*corev1.Node
	Pods      []*corev1.Pod
	Slices    []*resourcev1.ResourceSlice
	Claims    []*resourcev1.ResourceClaim
	Templates []*resourcev1.ResourceClaimTemplate
	Groups    []*schedulingv1beta1.PodGroup
	PDBs      []*policyv1.PodDisruptionBudget
	Ignored   map[string]int // other kinds, by "apiVersion kind": how many
}

// item is the type header every object carries.
type item struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// The API versions this tool reads, as kube-scheduler v1.37 does.
var wantVersion = map[string]string{
	"Node": "v1", "Pod": "v1",
	"ResourceSlice": "resource.k8s.io/v1", "ResourceClaim": "resource.k8s.io/v1",
	"ResourceClaimTemplate": "resource.k8s.io/v1", "PodGroup": "scheduling.k8s.io/v1beta1",
	"PodDisruptionBudget": "policy/v1",
}

// parseObjects reads JSON or YAML: a List (kubectl get -o json), a single object, or a YAML
// stream of objects separated by "---" (a manifest). `source` names the input in errors.
func parseObjects(data []byte, source string) (*objects, error) {
	out := &objects{Ignored: map[string]int{}}
	docs := [][]byte{data}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, bad("%s: empty input", source)
	}
	if trimmed[0] != '{' {
		docs = splitYAML(data)
	}
	for i, doc := range docs {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, bad("%s: document %d: not JSON or YAML: %v", source, i+1, err)
		}
		if string(bytes.TrimSpace(js)) == "null" {
			continue // an empty YAML document
		}
		if err := out.add(js, source); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// splitYAML splits a YAML stream at its "---" lines.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			docs = append(docs, []byte(strings.Join(cur, "\n")))
			cur = nil
			continue
		}
		cur = append(cur, line)
	}
	return append(docs, []byte(strings.Join(cur, "\n")))
}

// add decodes one object (a List recursively) into o.
func (o *objects) add(js []byte, source string) error {
	var h item
	if err := json.Unmarshal(js, &h); err != nil {
		return bad("%s: not a Kubernetes object: %v", source, err)
	}
	if h.Kind == "List" || strings.HasSuffix(h.Kind, "List") {
		for i, raw := range h.Items {
			if err := o.add(raw, fmt.Sprintf("%s: items[%d]", source, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if h.Kind == "" {
		return bad("%s: an object without kind", source)
	}
	name := h.Kind + " " + h.Metadata.Name
	if h.Metadata.Namespace != "" {
		name = h.Kind + " " + h.Metadata.Namespace + "/" + h.Metadata.Name
	}
	want, known := wantVersion[h.Kind]
	if !known {
		o.Ignored[h.APIVersion+" "+h.Kind]++
		return nil
	}
	if h.APIVersion != want {
		return bad("%s: %s: apiVersion %q, this tool reads %s (kube-scheduler v1.37's version)", source, name, h.APIVersion, want)
	}
	if h.Metadata.Name == "" {
		return bad("%s: %s without metadata.name", source, h.Kind)
	}
	decode := func(into any) error {
		if err := json.Unmarshal(js, into); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return bad("%s: %s: field %s: %s is not a %s", source, name, te.Field, te.Value, te.Type)
			}
			return bad("%s: %s: %v", source, name, err)
		}
		return nil
	}
	switch h.Kind {
	case "Node":
		n := &corev1.Node{}
		if err := decode(n); err != nil {
			return err
		}
		o.Nodes = append(o.Nodes, n)
	case "Pod":
		p := &corev1.Pod{}
		if err := decode(p); err != nil {
			return err
		}
		p.Namespace = namespaceOf(p.Namespace) // as kubectl apply would place it
		o.Pods = append(o.Pods, p)
	case "ResourceSlice":
		s := &resourcev1.ResourceSlice{}
		if err := decode(s); err != nil {
			return err
		}
		o.Slices = append(o.Slices, s)
	case "ResourceClaim":
		c := &resourcev1.ResourceClaim{}
		if err := decode(c); err != nil {
			return err
		}
		c.Namespace = namespaceOf(c.Namespace) // as kubectl apply would place it
		o.Claims = append(o.Claims, c)
	case "ResourceClaimTemplate":
		t := &resourcev1.ResourceClaimTemplate{}
		if err := decode(t); err != nil {
			return err
		}
		t.Namespace = namespaceOf(t.Namespace) // as kubectl apply would place it
		o.Templates = append(o.Templates, t)
	case "PodGroup":
		g := &schedulingv1beta1.PodGroup{}
		if err := decode(g); err != nil {
			return err
		}
		g.Namespace = namespaceOf(g.Namespace) // as kubectl apply would place it
		o.Groups = append(o.Groups, g)
	case "PodDisruptionBudget":
		b := &policyv1.PodDisruptionBudget{}
		if err := decode(b); err != nil {
			return err
		}
		b.Namespace = namespaceOf(b.Namespace)
		o.PDBs = append(o.PDBs, b)
	}
	return nil
}

// missing names the kinds of a live-cluster dump that are absent, with what that means.
func (o *objects) missing() []string {
	var out []string
	if len(o.Nodes) == 0 {
		out = append(out, "no Nodes: there is no topology to place the preemptor in")
	}
	if len(o.Pods) == 0 {
		out = append(out, "no Pods: nothing runs, so nobody can be preempted")
	}
	if len(o.Slices) == 0 {
		out = append(out, "no ResourceSlices: no DRA devices (only an extendedResource from the args can be modelled)")
	}
	if len(o.Claims) == 0 {
		out = append(out, "no ResourceClaims: no pod is seen holding DRA devices")
	}
	if len(o.Groups) == 0 {
		out = append(out, "no PodGroups: every pod is its own workload")
	}
	var ignored []string
	for k, n := range o.Ignored {
		ignored = append(ignored, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(ignored)
	if len(ignored) > 0 {
		out = append(out, "ignored (not read by the plugin): "+strings.Join(ignored, ", "))
	}
	return out
}

// splitName reads "namespace/name" or "name" (namespace "default").
func splitName(s string) (namespace, name string) {
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "default", s
}
