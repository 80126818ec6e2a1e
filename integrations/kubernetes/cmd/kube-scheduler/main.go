// SPDX-License-Identifier: MIT

// Command kube-scheduler is kube-scheduler v1.37.2 built as an out-of-tree scheduler, the
// sigs.k8s.io/scheduler-plugins way: app.NewSchedulerCommand with extra plugins registered
// by app.WithPlugin. A KubeSchedulerConfiguration (--config) chooses per profile whether
// PostFilter is the stock DefaultPreemption or topopreempt's plugin; with no profile naming
// an out-of-tree plugin it behaves exactly like the stock binary.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // JSON log format, as the stock binary
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as the stock binary
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as the stock binary
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	topopreempt "github.com/topopreempt/topopreempt/integrations/kubernetes/plugin"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(topopreempt.Name, topopreempt.New))
	os.Exit(cli.Run(command))
}
