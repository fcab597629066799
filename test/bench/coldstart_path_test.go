package bench

import (
	"context"
	"maps"
	"slices"
	"time"
)

// coldPath is where a batch of cold starts spent its time, as the agent's metrics count it, read just before
// the first apply and just after the last Ready: what says whether the agent's workers, its token bucket or
// Docker bound the batch (docs/performance.md, "Cold starts at once"). Sums are seconds.
type coldPath struct {
	sandbox              controllerTime     // the Sandbox controller's passes
	requests             float64            // the agent's API requests
	limiterSum, limiterN float64            // their wait for the agent's token bucket
	dockerSum, dockerN   float64            // the agent's Docker operations
	opN, opSum           map[string]float64 // the same, by operation
}

// coldMark is the running totals of the agent now.
func (e *env) coldMark(ctx context.Context) (coldPath, error) {
	agent, err := e.agent.scrape(ctx)
	if err != nil {
		return coldPath{}, err
	}
	return coldPath{
		sandbox:    readController(agent, "sandbox"),
		requests:   agent.sum("rest_client_requests_total", nil),
		limiterSum: agent.histogramSum("rest_client_rate_limiter_duration_seconds", nil),
		limiterN:   agent.sum("rest_client_rate_limiter_duration_seconds", nil),
		dockerSum:  agent.histogramSum("dockside_docker_operation_duration_seconds", nil),
		dockerN:    agent.sum("dockside_docker_operation_duration_seconds", nil),
		opN:        dockerCalls(agent),
		opSum:      agent.histogramSumByLabel("dockside_docker_operation_duration_seconds", "operation"),
	}, nil
}

// coldFigures are what happened between from and to for n Sandboxes over wall, without baselines.
func coldFigures(from, to coldPath, n int, wall time.Duration) []figure {
	var s controllerTime
	s.add(from.sandbox, to.sandbox)
	per := func(v float64) *float64 { return num(v / float64(n)) }
	limiterSum, limiterN := to.limiterSum-from.limiterSum, to.limiterN-from.limiterN
	dockerSum, dockerN := to.dockerSum-from.dockerSum, to.dockerN-from.dockerN
	figures := []figure{
		{Name: "Sandbox controller passes per Sandbox", Unit: "passes", Dockside: per(s.passes)},
		{Name: "a pass's wait in the Sandbox queue, mean", Unit: "ms", Dockside: meanMs(s.queueSum, s.queueN)},
		{Name: "a Sandbox pass, mean", Unit: "ms", Dockside: meanMs(s.passSum, s.passes)},
		{Name: "Sandbox passes under way, mean over the batch (at most the agent's workers)", Unit: "passes", Dockside: num(s.passSum / wall.Seconds())},
		{Name: "Docker operations per Sandbox", Unit: "operations", Dockside: per(dockerN)},
		{Name: "Docker operations under way, mean over the batch", Unit: "operations", Dockside: num(dockerSum / wall.Seconds())},
		{Name: "the agent's API requests per Sandbox", Unit: "requests", Dockside: per(to.requests - from.requests)},
		{Name: "the agent's wait for its API token bucket, mean per request", Unit: "ms", Dockside: meanMs(limiterSum, limiterN)},
	}
	return append(figures, opFigures(from, to, n)...)
}

// opFigures say which Docker operations the batch made, per Sandbox, and how long each took at mean: what
// tells the operations that bound the batch apart from those that ride along.
func opFigures(from, to coldPath, n int) []figure {
	var figures []figure
	for _, op := range slices.Sorted(maps.Keys(to.opN)) {
		calls := to.opN[op] - from.opN[op]
		if calls == 0 {
			continue
		}
		figures = append(figures,
			figure{Name: "Docker " + op + " per Sandbox", Unit: "operations", Dockside: num(calls / float64(n))},
			figure{Name: "Docker " + op + ", mean", Unit: "ms", Dockside: meanMs(to.opSum[op]-from.opSum[op], calls)})
	}
	return figures
}
