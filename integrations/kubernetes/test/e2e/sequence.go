// SPDX-License-Identifier: MIT

package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/topopreempt/topopreempt/integrations/kubernetes/internal/cluster"
)

// PreemptorOutcome is what happened to one preemptor of a sequence.
type PreemptorOutcome struct {
	Pod              string  `json:"pod"`
	Ran              bool    `json:"ran"`
	SecondsToRun     float64 `json:"seconds_to_run,omitempty"`
	GaveUp           string  `json:"gave_up,omitempty"` // why the harness stopped waiting for it
	Node             string  `json:"node,omitempty"`
	GPUs             []int   `json:"gpus,omitempty"`
	TopologyHonoured bool    `json:"topology_honoured"`
	TopologyNote     string  `json:"topology_note"`
	Victims          int     `json:"victims"`
	VictimCost       float64 `json:"victim_cost"`
	WastedEvictions  int     `json:"wasted_evictions"`
	// PostFilter calls during this preemptor's turn by status, and their summed duration (the
	// difference of the histogram's _count and _sum before and after the turn): with one call
	// of a status, its exact duration.
	PostFilterCalls map[string]int     `json:"postfilter_calls,omitempty"`
	PostFilterMs    map[string]float64 `json:"postfilter_ms,omitempty"`
	// DecidedMs is the TopoPreempt plugin's own "decided=" time for this pod, from the
	// scheduler's log (absent for other schedulers, or when the plugin handed the call to stock).
	DecidedMs []float64 `json:"decided_ms,omitempty"`
}

// unschedulableGrace is how long a preemptor must stay unschedulable, not nominated, with no
// new eviction, before the harness gives up on it (stock with DRA claims never preempts).
const unschedulableGrace = 5 * time.Second

// runSequence submits s.Preemptors copies of s.Preemptor one after another on the running
// scheduler, each once the previous one runs or is given up on (unschedulable and not
// nominated for unschedulableGrace with no new eviction, or s.Watch passed; a preemptor given
// up on is deleted so that it does not compete with the next). Victims are attributed to the
// preemptor during whose turn they went.
func runSequence(ctx context.Context, c *cluster.Cluster, sched *cluster.Scheduler, s *Scenario, res *Result, ns string,
	fillWatch watch.Interface, preempted map[string]bool) (*Result, error) {
	client := c.Client
	counted := map[string]bool{}
	used := map[gpuKey]bool{}
	ranCount, honoured := 0, 0
	firstNote := ""
	before, err := postFilterTotals(sched)
	if err != nil {
		return nil, err
	}
	for k := 0; k < s.Preemptors; k++ {
		spec := s.Preemptor
		spec.Name = fmt.Sprintf("%s-s%02d", s.Preemptor.Name, k)
		step := *s
		step.Preemptor = spec
		name := preemptorPodName(spec, 0)
		drain(fillWatch, preempted)
		evictedBefore := len(preempted)
		submitted := time.Now()
		if err := submitPreemptor(ctx, client, ns, s.Mode, spec); err != nil {
			return nil, err
		}
		sub := &Result{Scenario: s.Name, Mode: s.Mode}
		out := PreemptorOutcome{Pod: name}
		deadline := submitted.Add(s.Watch)
		var stuckSince time.Time
		for time.Now().Before(deadline) {
			if err := pollAlive(c, fillWatch, preempted); err != nil {
				return nil, err
			}
			pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			if pod.Spec.NodeName != "" && pod.Status.Phase == corev1.PodRunning {
				if !sub.PreemptorRan {
					sub.PreemptorRan = true
					sub.SecondsToRun = time.Since(submitted).Seconds()
					deadline = time.Now().Add(2 * time.Second) // late evictions still show up
				}
			} else if unschedulable(pod) && pod.Status.NominatedNodeName == "" && len(preempted) == evictedBefore {
				if stuckSince.IsZero() {
					stuckSince = time.Now()
				} else if time.Since(stuckSince) >= unschedulableGrace {
					out.GaveUp = fmt.Sprintf("unschedulable, not nominated, no eviction for %s", unschedulableGrace)
					break
				}
			} else {
				stuckSince = time.Time{}
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !sub.PreemptorRan && out.GaveUp == "" {
			out.GaveUp = fmt.Sprintf("did not run within %s", s.Watch)
		}
		drain(fillWatch, preempted)
		if err := observeAfter(ctx, client, ns, &step, sub, preempted, counted, used); err != nil {
			return nil, err
		}
		after, err := postFilterTotals(sched)
		if err != nil {
			return nil, err
		}
		out.PostFilterCalls, out.PostFilterMs = map[string]int{}, map[string]float64{}
		for series, a := range after {
			if n := a[0] - before[series][0]; n > 0 {
				out.PostFilterCalls[series] = int(math.Round(n))
				out.PostFilterMs[series] = 1000 * (a[1] - before[series][1])
			}
		}
		before = after
		if !sub.PreemptorRan {
			// Out of the way of the next one: a pending preemptor is retried on every event.
			now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
			if err := client.CoreV1().Pods(ns).Delete(ctx, name, now); err != nil {
				return nil, fmt.Errorf("deleting %s: %w", name, err)
			}
			if s.Mode == DRA {
				if err := client.ResourceV1().ResourceClaims(ns).Delete(ctx, name+"-gpus", now); err != nil {
					return nil, fmt.Errorf("deleting %s-gpus: %w", name, err)
				}
			}
		}
		out.Ran, out.SecondsToRun = sub.PreemptorRan, sub.SecondsToRun
		out.TopologyHonoured, out.TopologyNote = sub.TopologyHonoured, sub.TopologyNote
		if len(sub.Placements) > 0 {
			out.Node, out.GPUs = sub.Placements[0].Node, sub.Placements[0].GPUs
		}
		out.Victims, out.VictimCost, out.WastedEvictions = len(sub.Victims), sub.VictimCost, sub.WastedEvictions
		logf("%s: %s ran=%v (%.1fs) %s victims=%d cost=%g wasted=%d postfilter=%v ms=%v", ns, name, out.Ran,
			out.SecondsToRun, out.TopologyNote, out.Victims, out.VictimCost, out.WastedEvictions,
			out.PostFilterCalls, out.PostFilterMs)

		res.Placements = append(res.Placements, sub.Placements...)
		res.Victims = append(res.Victims, sub.Victims...)
		res.VictimCost += sub.VictimCost
		res.WastedEvictions += sub.WastedEvictions
		res.PDBViolations += sub.PDBViolations
		if sub.PreemptorRan {
			ranCount++
			res.SecondsToRun = math.Max(res.SecondsToRun, sub.SecondsToRun)
			if sub.TopologyHonoured {
				honoured++
			}
			if firstNote == "" && !sub.TopologyHonoured {
				firstNote = sub.TopologyNote
			}
		}
		res.Sequence = append(res.Sequence, out)
	}
	res.PreemptorRan = ranCount > 0
	res.TopologyHonoured = ranCount > 0 && honoured == ranCount
	res.TopologyNote = fmt.Sprintf("%d of %d preemptors ran, %d inside their requirement", ranCount, s.Preemptors, honoured)
	if firstNote != "" {
		res.TopologyNote += "; first outside: " + firstNote
	} else if ranCount == 0 {
		res.TopologyNote += "; preemptor did not run"
	}
	if decided, err := decidedFromLog(sched.LogPath(), ns); err != nil {
		logf("%s: reading the scheduler log: %v", ns, err)
	} else {
		for i := range res.Sequence {
			res.Sequence[i].DecidedMs = decided[res.Sequence[i].Pod]
		}
	}
	var err2 error
	res.PostFilter, err2 = postFilterTimings(sched)
	return res, err2
}

func unschedulable(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// postFilterTotals: the (count, sum in seconds) of every PostFilter / PodGroupPostFilter
// series, keyed "EXTENSION_POINT STATUS".
func postFilterTotals(sched *cluster.Scheduler) (map[string][2]float64, error) {
	samples, err := sched.ExtensionPointDurations("PostFilter", "PodGroupPostFilter")
	if err != nil {
		return nil, err
	}
	out := map[string][2]float64{}
	for _, sample := range samples {
		key := sample.Labels["extension_point"] + " " + sample.Labels["status"]
		t := out[key]
		out[key] = [2]float64{t[0] + sample.Count, t[1] + sample.Sum}
	}
	return out, nil
}

var (
	preemptingLine = regexp.MustCompile(`"topopreempt: preempting" pod="([^"]+)"`)
	decidedField   = regexp.MustCompile(` decided="?([0-9.]+[a-zµ]+)"?`)
)

// decidedFromLog reads the TopoPreempt plugin's "topopreempt: preempting" lines of namespace
// ns: pod name -> the "decided" durations in ms, in log order.
func decidedFromLog(path, ns string) (map[string][]float64, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string][]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		m := preemptingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		podNS, pod, ok := strings.Cut(m[1], "/")
		if !ok || podNS != ns {
			continue
		}
		d := decidedField.FindStringSubmatch(line)
		if d == nil {
			continue
		}
		dur, err := time.ParseDuration(d[1])
		if err != nil {
			continue
		}
		out[pod] = append(out[pod], float64(dur)/float64(time.Millisecond))
	}
	return out, nil
}

// exactQuantiles: nearest-rank p50, p90, p99 and the maximum of xs (0s when empty).
func exactQuantiles(xs []float64) (p50, p90, p99, max float64) {
	if len(xs) == 0 {
		return
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return s[i]
	}
	return rank(0.5), rank(0.9), rank(0.99), s[len(s)-1]
}

// sequenceMarkdown summarises the results that ran preemptor sequences: per result, the
// PostFilter histogram's quantiles (as histogram_quantile estimates them) and the exact
// per-turn PostFilter durations of the turns with a single successful call, with the plugin's
// own decision times where it logged them.
func sequenceMarkdown(results []*Result) string {
	var b strings.Builder
	for _, r := range results {
		if len(r.Sequence) == 0 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nPreemptor sequences (PostFilter: histogram count and p50/p90/p99 as histogram_quantile estimates them; " +
				"exact: the turns with one successful PostFilter call, that call's duration from the histogram's _sum, " +
				"nearest-rank p50/p90/p99/max; decided: the plugin's own log):\n\n")
			b.WriteString("| scenario | GPUs as | scheduler | preemptors ran | inside requirement | victims | cost | wasted | optimum (victims, cost) | PostFilter histogram: calls, p50/p90/p99 ms | exact ms: n, p50/p90/p99/max | decided ms: n, p50/p90/p99/max |\n")
			b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		}
		ran, inside := 0, 0
		var exact, decided []float64
		for _, o := range r.Sequence {
			if o.Ran {
				ran++
				if o.TopologyHonoured {
					inside++
				}
			}
			if o.PostFilterCalls["PostFilter Success"] == 1 {
				exact = append(exact, o.PostFilterMs["PostFilter Success"])
			}
			decided = append(decided, o.DecidedMs...)
		}
		var hist []string
		for _, p := range r.PostFilter {
			hist = append(hist, fmt.Sprintf("%s: %d, %.3g/%.3g/%.3g", p.Status, p.Count, 1000*p.P50Seconds, 1000*p.P90Seconds, 1000*p.P99Seconds))
		}
		quant := func(xs []float64) string {
			if len(xs) == 0 {
				return "—"
			}
			p50, p90, p99, max := exactQuantiles(xs)
			return fmt.Sprintf("%d, %.1f/%.1f/%.1f/%.1f", len(xs), p50, p90, p99, max)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d of %d | %d | %d | %g | %d | %d, %g | %s | %s | %s |\n", r.Scenario, r.Mode, r.Scheduler,
			ran, len(r.Sequence), inside, len(r.Victims), r.VictimCost, r.WastedEvictions, r.OptimumVictims, r.OptimumCost,
			strings.Join(hist, "; "), quant(exact), quant(decided))
	}
	for _, r := range results {
		if len(r.Sequence) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s (%s) / %s, per preemptor (PostFilter Success ms; victims, cost):", r.Scenario, r.Mode, r.Scheduler)
		for _, o := range r.Sequence {
			switch calls := o.PostFilterCalls["PostFilter Success"]; {
			case o.Ran && calls == 1:
				fmt.Fprintf(&b, " %.1f (%d, %g)", o.PostFilterMs["PostFilter Success"], o.Victims, o.VictimCost)
			case o.Ran && calls == 0:
				fmt.Fprintf(&b, " no call (%d, %g)", o.Victims, o.VictimCost)
			case o.Ran:
				fmt.Fprintf(&b, " %d calls %.1f (%d, %g)", calls, o.PostFilterMs["PostFilter Success"], o.Victims, o.VictimCost)
			default:
				fmt.Fprintf(&b, " — (%d, %g)", o.Victims, o.VictimCost)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
