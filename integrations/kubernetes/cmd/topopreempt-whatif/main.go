// SPDX-License-Identifier: MIT

// Command topopreempt-whatif answers offline "whom would TopoPreempt preempt for this pod, and
// why" from a dump of a live cluster:
//
//	kubectl get nodes,pods,resourceslices,resourceclaims,podgroups,poddisruptionbudgets -A -o json > cluster.json
//	topopreempt-whatif -f cluster.json --pod team-a/trainer-0
//
// It builds the model with the plugin's own code (topopreempt.BuildModel, the plugin's args
// from a KubeSchedulerConfiguration or flags) and asks the library's C ABI for a plan with
// every solver or a chosen one. Installed as kubectl-topopreempt-whatif it also runs as
// `kubectl topopreempt whatif`. Exit status: 0 a plan (of any status), 1 the library failed,
// 2 bad input or usage, 3 the plugin could not express the question and would fall back to
// the stock DefaultPreemption. See docs/kubernetes.md, "What-if from a live cluster".
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	topopreempt "github.com/topopreempt/topopreempt/integrations/kubernetes/plugin"
)

// Exit statuses.
const (
	exitPlan        = 0
	exitLibrary     = 1
	exitBadInput    = 2
	exitUnsupported = 3
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options are the command line, parsed.
type options struct {
	cluster, pod, podGroup, preemptor, config, profile, solver, now string
	topologyKeys, drivers, extendedResource, cost                   string
	jsonOut                                                         bool
}

// run is the whole command (main without os.Exit, for the tests). It never panics: a panic
// anywhere below becomes exit 1 with the message.
func run(argv []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "topopreempt-whatif: internal error: %v\n", r)
			code = exitLibrary
		}
	}()
	var o options
	fs := flag.NewFlagSet("topopreempt-whatif", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.cluster, "f", "-", "the cluster: `file` of `kubectl get nodes,pods,resourceslices,resourceclaims,podgroups,poddisruptionbudgets -A -o json` (JSON or YAML; - stdin)")
	fs.StringVar(&o.pod, "pod", "", "the preemptor: a pending pod of the cluster file, `namespace/name`")
	fs.StringVar(&o.podGroup, "podgroup", "", "the preemptor: the pending pods of a PodGroup of the cluster file, `namespace/name`")
	fs.StringVar(&o.preemptor, "preemptor", "", "the preemptor: a manifest `file` (YAML or JSON): one Pod, or a PodGroup and its Pods, with their ResourceClaims or ResourceClaimTemplates")
	fs.StringVar(&o.config, "config", "", "a KubeSchedulerConfiguration `file`: the TopoPreempt pluginConfig args are read from it (default: the plugin's defaults)")
	fs.StringVar(&o.profile, "profile", "", "the profile's schedulerName in --config (default: the first profile with TopoPreempt args)")
	fs.StringVar(&o.solver, "solver", "all", "all, or one of "+strings.Join(topopreempt.Solvers, ", "))
	fs.StringVar(&o.now, "now", "", "the time the question is asked at, RFC 3339 (prices lost_work; default: now)")
	fs.StringVar(&o.topologyKeys, "topology-keys", "", "override args.topologyKeys: node label keys, widest first, comma-separated")
	fs.StringVar(&o.drivers, "drivers", "", "override args.drivers: DRA drivers whose devices are GPUs, comma-separated")
	fs.StringVar(&o.extendedResource, "extended-resource", "", "override args.extendedResource")
	fs.StringVar(&o.cost, "cost", "", "override args.cost: terms `model[:weight[:floor]]`, comma-separated (e.g. extra:1:0,victim_count:100)")
	fs.BoolVar(&o.jsonOut, "json", false, "print the answer as JSON")
	if err := fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitPlan
		}
		return exitBadInput
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "topopreempt-whatif: unexpected argument %q\n", fs.Arg(0))
		return exitBadInput
	}
	a, err := ask(&o, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "topopreempt-whatif: %v\n", err)
		var u *topopreempt.Unsupported
		var b *badInput
		switch {
		case errors.As(err, &u):
			return exitUnsupported
		case errors.As(err, &b):
			return exitBadInput
		}
		return exitLibrary
	}
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(a); err != nil {
			fmt.Fprintf(stderr, "topopreempt-whatif: %v\n", err)
			return exitLibrary
		}
	} else {
		a.print(stdout)
	}
	for _, s := range a.Plans {
		if s.Error == "" {
			return exitPlan
		}
	}
	fmt.Fprintln(stderr, "topopreempt-whatif: no solver gave a plan")
	return exitLibrary
}

// ask reads the inputs, builds the model with the plugin's code and asks each solver.
func ask(o *options, stdin io.Reader) (*answer, error) {
	given := 0
	for _, s := range []string{o.pod, o.podGroup, o.preemptor} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return nil, bad("give exactly one of --pod, --podgroup and --preemptor")
	}
	solvers := topopreempt.Solvers
	if o.solver != "all" {
		solvers = []string{o.solver}
		ok := false
		for _, s := range topopreempt.Solvers {
			ok = ok || s == o.solver
		}
		if !ok {
			return nil, bad("--solver %q: want all or one of %s", o.solver, strings.Join(topopreempt.Solvers, ", "))
		}
	}
	now := time.Now()
	if o.now != "" {
		t, err := time.Parse(time.RFC3339, o.now)
		if err != nil {
			return nil, bad("--now: %v", err)
		}
		now = t
	}
	args, err := pluginArgs(o)
	if err != nil {
		return nil, err
	}
	data, name, err := readInput(o.cluster, stdin)
	if err != nil {
		return nil, err
	}
	cluster, err := parseObjects(data, name)
	if err != nil {
		return nil, err
	}
	spec := &preemptorSpec{pod: o.pod, podGroup: o.podGroup, manifestName: o.preemptor}
	if o.preemptor != "" {
		data, _, err := readInput(o.preemptor, nil)
		if err != nil {
			return nil, err
		}
		if spec.manifest, err = parseObjects(data, o.preemptor); err != nil {
			return nil, err
		}
	}
	q, err := newQuestion(cluster, spec, now)
	if err != nil {
		return nil, err
	}
	m, err := topopreempt.BuildModel(args, q.in, q.pods, q.group)
	if err != nil {
		var u *topopreempt.Unsupported
		if errors.As(err, &u) {
			return nil, fmt.Errorf("the plugin would fall back to the stock DefaultPreemption: %w", err)
		}
		return nil, bad("%v", err) // the model's errors name the object and field
	}
	a := newAnswer(args, q, m)
	for _, s := range solvers {
		plan, pdb, err := topopreempt.SolvePDBFirst(m, q.in.PDBs, args, s)
		a.add(s, m, plan, pdb, err)
	}
	return a, nil
}

func readInput(path string, stdin io.Reader) ([]byte, string, error) {
	if path == "-" {
		if stdin == nil {
			return nil, "", bad("stdin can be read once only")
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, "", bad("stdin: %v", err)
		}
		return data, "stdin", nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", bad("%v", err)
	}
	return data, path, nil
}

// schedulerConfig is the part of a KubeSchedulerConfiguration this tool reads.
type schedulerConfig struct {
	Kind     string `json:"kind"`
	Profiles []struct {
		SchedulerName string `json:"schedulerName"`
		PluginConfig  []struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"pluginConfig"`
	} `json:"profiles"`
}

// pluginArgs are the plugin's args: its defaults, then --config's TopoPreempt args (decoded
// over the defaults, as the plugin's New does), then the flags; checked as New checks them.
func pluginArgs(o *options) (*topopreempt.Args, error) {
	args := topopreempt.DefaultArgs()
	if o.config != "" {
		data, err := os.ReadFile(o.config)
		if err != nil {
			return nil, bad("--config: %v", err)
		}
		var cfg schedulerConfig
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			return nil, bad("--config %s: %v", o.config, err)
		}
		if cfg.Kind != "KubeSchedulerConfiguration" {
			return nil, bad("--config %s: kind %q, want KubeSchedulerConfiguration", o.config, cfg.Kind)
		}
		found := false
		for _, p := range cfg.Profiles {
			if found || o.profile != "" && p.SchedulerName != o.profile {
				continue
			}
			for i, pc := range p.PluginConfig {
				if pc.Name != topopreempt.Name || len(pc.Args) == 0 {
					continue
				}
				if err := json.Unmarshal(pc.Args, &args); err != nil {
					return nil, bad("--config %s: profile %q pluginConfig[%d] (%s) args: %v", o.config, p.SchedulerName, i, topopreempt.Name, err)
				}
				found = true
			}
		}
		if !found {
			return nil, bad("--config %s: no profile%s has pluginConfig args for %s", o.config, map[bool]string{true: " " + o.profile}[o.profile != ""], topopreempt.Name)
		}
	}
	if o.topologyKeys != "" {
		args.TopologyKeys = strings.Split(o.topologyKeys, ",")
	}
	if o.drivers != "" {
		args.Drivers = strings.Split(o.drivers, ",")
	}
	if o.extendedResource != "" {
		args.ExtendedResource = o.extendedResource
	}
	if o.cost != "" {
		args.Cost = nil
		for _, term := range strings.Split(o.cost, ",") {
			parts := strings.Split(term, ":")
			if len(parts) > 3 {
				return nil, bad("--cost %q: want model[:weight[:floor]]", term)
			}
			t := topopreempt.CostTerm{Model: parts[0]}
			for i, p := range parts[1:] {
				v, err := strconv.ParseFloat(p, 64)
				if err != nil {
					return nil, bad("--cost %q: %q is not a number", term, p)
				}
				if i == 0 {
					t.Weight = &v
				} else {
					t.Floor = &v
				}
			}
			args.Cost = append(args.Cost, t)
		}
	}
	if err := args.Validate(); err != nil {
		return nil, bad("%v", err)
	}
	return &args, nil
}
