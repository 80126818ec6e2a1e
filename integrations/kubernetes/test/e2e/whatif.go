// SPDX-License-Identifier: MIT

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/topopreempt/topopreempt/integrations/kubernetes/internal/cluster"
)

// The what-if check (issue 33, item 7): for the variant named by -whatif, just before its
// preemptor is submitted (the scheduler running, the fill static, so exactly the state its
// PostFilter then reads), the state is dumped as an administrator would (`kubectl get
// nodes,pods,resourceslices,resourceclaims,podgroups,poddisruptionbudgets -A -o json`), the
// preemptor is written as a manifest of the objects the harness then creates, and
// `topopreempt-whatif -f DUMP --preemptor MANIFEST --config <the variant's config> --solver
// branch_and_bound --json` (the plugin's solver) is asked. After the run, its plan's victims
// and cost must be what the scheduler evicted. States where that is not meaningful are left
// out, with the reason (whatIfApplies).

var whatIfVariant = flag.String("whatif", "", "a variant name: ask -bin's topopreempt-whatif each state's question on a kubectl dump taken just before the preemptor is submitted, and fail where its plan (victims, cost) is not what the variant evicted (whatif.go)")

// WhatIf is topopreempt-whatif's answer on a kubectl dump of the state, and how it compares with
// what the scheduler evicted.
type WhatIf struct {
	Status  string   `json:"status"`  // the plan's status; "fallback" if the tool says the plugin falls back
	Victims []string `json:"victims"` // the fill pods of its plan, sorted
	Cost    float64  `json:"cost"`
	Seconds float64  `json:"seconds"` // the dump and the answer, wall clock
	Agrees  bool     `json:"agrees"`
	Note    string   `json:"note,omitempty"` // how they differ
}

// whatIfApplies says why s's what-if is not compared ("" it is): several preemptors (one
// question each, asked as the earlier ones' victims terminate), the scale state (a dump of
// 10,000 pods), or a state whose plan the scheduler is known to refuse.
func whatIfApplies(s *Scenario) string {
	switch {
	case s.Preemptors > 1:
		return "preemptors one after another"
	case s.Preemptor.Group == nil && s.Preemptor.Pods > 1:
		return "several preemptors at once"
	case s.OwnControlPlane:
		return "the scale state"
	}
	return s.WhatIfDiffers
}

// askWhatIf dumps the state with kubectl and asks topopreempt-whatif for v's plan (files in
// the control plane's directory, named after ns).
func askWhatIf(ctx context.Context, c *cluster.Cluster, s *Scenario, ns string, v Variant) (*WhatIf, error) {
	started := time.Now()
	dump := filepath.Join(c.Dir, ns+"-state.json")
	get := exec.CommandContext(ctx, filepath.Join(*binDir, "kubectl"), "--kubeconfig="+c.Kubeconfig, "get",
		// Each kind at the version the tool reads, whatever the server prefers.
		"nodes,pods,resourceslices.v1.resource.k8s.io,resourceclaims.v1.resource.k8s.io,podgroups.v1beta1.scheduling.k8s.io,poddisruptionbudgets.v1.policy",
		"-A", "-o", "json")
	var stderr bytes.Buffer
	get.Stderr = &stderr
	out, err := get.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl get: %v: %s", err, stderr.String())
	}
	if err := os.WriteFile(dump, out, 0o644); err != nil {
		return nil, err
	}
	manifest := filepath.Join(c.Dir, ns+"-preemptor.json")
	if err := writePreemptorManifest(manifest, ns, s); err != nil {
		return nil, err
	}
	ask := exec.CommandContext(ctx, filepath.Join(*binDir, "topopreempt-whatif"), "-f", dump, "--preemptor", manifest,
		"--config", v.Config, "--solver", "branch_and_bound", "--json")
	stderr.Reset()
	ask.Stderr = &stderr
	out, err = ask.Output()
	w := &WhatIf{Seconds: time.Since(started).Seconds()}
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		w.Status, w.Note = "fallback", strings.TrimSpace(stderr.String())
		return w, nil
	}
	if err != nil {
		return nil, fmt.Errorf("topopreempt-whatif: %v: %s", err, stderr.String())
	}
	var answer struct {
		Plans []struct {
			Status  string  `json:"status"`
			Cost    float64 `json:"cost"`
			Victims []struct {
				Pods []string `json:"pods"`
			} `json:"victims"`
		} `json:"plans"`
	}
	if err := json.Unmarshal(out, &answer); err != nil || len(answer.Plans) != 1 {
		return nil, fmt.Errorf("topopreempt-whatif: not one plan in %q (%v)", out, err)
	}
	plan := answer.Plans[0]
	w.Status, w.Cost = plan.Status, plan.Cost
	w.Victims = []string{} // compared, and shown, even when empty
	for _, v := range plan.Victims {
		for _, p := range v.Pods {
			w.Victims = append(w.Victims, strings.TrimPrefix(p, ns+"/"))
		}
	}
	slices.Sort(w.Victims)
	return w, nil
}

// writePreemptorManifest writes the objects submitPreemptor creates as a kubectl List.
func writePreemptorManifest(path, ns string, s *Scenario) error {
	group, claims, pods := preemptorObjects(ns, s.Mode, s.Preemptor)
	var items []runtime.Object
	if group != nil {
		group.APIVersion, group.Kind = "scheduling.k8s.io/v1beta1", "PodGroup"
		items = append(items, group)
	}
	for _, c := range claims {
		c.APIVersion, c.Kind = "resource.k8s.io/v1", "ResourceClaim"
		items = append(items, c)
	}
	for _, p := range pods {
		p.APIVersion, p.Kind = "v1", "Pod"
		// What the API server's priority admission writes (the dump's pods have it).
		p.Spec.Priority = ptr.To(PriorityClasses[s.Preemptor.Priority])
		items = append(items, p)
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// compare records whether the what-if plan is what the scheduler evicted.
func (w *WhatIf) compare(res *Result) {
	evicted := []string{}
	for _, v := range res.Victims {
		evicted = append(evicted, v.Pod)
	}
	slices.Sort(evicted)
	w.Agrees = w.Status != "fallback" && slices.Equal(w.Victims, evicted) && math.Abs(w.Cost-res.VictimCost) < 1e-9
	if !w.Agrees {
		w.Note = strings.TrimSpace(fmt.Sprintf("%s what-if %s: %v cost %g; the scheduler evicted %v cost %g", w.Note, w.Status, w.Victims, w.Cost, evicted, res.VictimCost))
	}
}

// whatIfMarkdown lists the what-if checks of the results.
func whatIfMarkdown(results []*Result) string {
	var b strings.Builder
	for _, r := range results {
		if r.WhatIf == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nWhat-if on a kubectl dump of each state (topopreempt-whatif, branch_and_bound):\n\n")
		}
		verdict := "equal"
		if !r.WhatIf.Agrees {
			verdict = "DIFFERS: " + r.WhatIf.Note
		}
		fmt.Fprintf(&b, "- %s (%s) / %s: %s, %d victims, cost %g (%.1fs): %s\n", r.Scenario, r.Mode, r.Scheduler,
			r.WhatIf.Status, len(r.WhatIf.Victims), r.WhatIf.Cost, r.WhatIf.Seconds, verdict)
	}
	return b.String()
}
