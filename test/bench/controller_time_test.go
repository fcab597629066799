package bench

// controllerTime is one controller's passes as the agent's metrics count them: how many, their wait in its
// queue and their time in Reconcile (sums in seconds; queueN counts the waits).
type controllerTime struct {
	passes, queueSum, queueN, passSum float64
}

// readController is the running totals of the agent's controller named name.
func readController(agent metrics, name string) controllerTime {
	ctrl := func(l map[string]string) bool { return l["controller"] == name }
	queue := func(l map[string]string) bool { return l["name"] == name }
	return controllerTime{
		passes:   agent.sum("controller_runtime_reconcile_total", ctrl),
		queueSum: agent.histogramSum("workqueue_queue_duration_seconds", queue), queueN: agent.sum("workqueue_queue_duration_seconds", queue),
		passSum: agent.histogramSum("controller_runtime_reconcile_time_seconds", ctrl),
	}
}

// add adds what happened between from and to.
func (c *controllerTime) add(from, to controllerTime) {
	c.passes += to.passes - from.passes
	c.queueSum, c.queueN = c.queueSum+to.queueSum-from.queueSum, c.queueN+to.queueN-from.queueN
	c.passSum += to.passSum - from.passSum
}

// meanMs is 1000 × sum / n in milliseconds, or nil when nothing was counted.
func meanMs(sum, n float64) *float64 {
	if n == 0 {
		return nil
	}
	return num(1000 * sum / n)
}
