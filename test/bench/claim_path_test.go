package bench

import (
	"context"
	"fmt"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// claimPath is where claims spent their time, as the agent's and the API server's metrics count it: read
// just before a claim's create and just after its Ready, and added up over a series (docs/pools.md, "How
// fast"). Sums are seconds; counts are observations.
type claimPath struct {
	claims                       float64
	claim                        controllerTime // the claim controller's passes
	requests, conflicts          float64        // the agent's API requests, and those answered 409
	writes                       float64        // the agent's API requests other than GETs (binding, statuses, refills)
	limiterSum, limiterN         float64        // the agent's wait for its API token bucket
	writeSum, writeN             float64        // the API server's PATCHes of dockside.dev objects (binding, statuses)
	createSum, createN           float64        // the API server's creates of SandboxClaims (the benchmark's own)
	poolPasses, sandboxesCreated float64        // the pool's passes, and Sandboxes created (refills, cold starts)
	statusWrites                 float64        // the API server's PATCHes of Sandboxes' status (the Sandbox controller's)
	apiCPU, agentCPU             float64        // CPU seconds of kube-apiserver and of the agent
}

// readPath is the running totals of a scrape of the agent and one of the API server.
func readPath(agent, api metrics) claimPath {
	dockside := func(l map[string]string) bool { return l["group"] == dsv1alpha1.GroupVersion.Group }
	patch := func(l map[string]string) bool { return dockside(l) && l["verb"] == "PATCH" }
	create := func(resource string) func(map[string]string) bool {
		return func(l map[string]string) bool {
			return dockside(l) && l["verb"] == "POST" && l["resource"] == resource && l["subresource"] == ""
		}
	}
	return claimPath{
		claim:      readController(agent, "sandboxclaim"),
		requests:   agent.sum("rest_client_requests_total", nil),
		conflicts:  agent.sum("rest_client_requests_total", func(l map[string]string) bool { return l["code"] == "409" }),
		writes:     agent.sum("rest_client_requests_total", func(l map[string]string) bool { return l["method"] != "GET" }),
		limiterSum: agent.histogramSum("rest_client_rate_limiter_duration_seconds", nil),
		limiterN:   agent.sum("rest_client_rate_limiter_duration_seconds", nil),
		writeSum:   api.histogramSum("apiserver_request_duration_seconds", patch), writeN: api.sum("apiserver_request_duration_seconds", patch),
		createSum:  api.histogramSum("apiserver_request_duration_seconds", create("sandboxclaims")),
		createN:    api.sum("apiserver_request_duration_seconds", create("sandboxclaims")),
		poolPasses: agent.sum("controller_runtime_reconcile_total", func(l map[string]string) bool { return l["controller"] == "sandboxwarmpool" }),
		sandboxesCreated: api.sum("apiserver_request_total", func(l map[string]string) bool {
			return create("sandboxes")(l) && l["code"] == "201"
		}),
		statusWrites: api.sum("apiserver_request_total", func(l map[string]string) bool {
			return patch(l) && l["resource"] == "sandboxes" && l["subresource"] == "status"
		}),
		apiCPU:   api.sum("process_cpu_seconds_total", nil),
		agentCPU: agent.sum("process_cpu_seconds_total", nil),
	}
}

// pathMark is the running totals now.
func (e *env) pathMark(ctx context.Context) (claimPath, error) {
	agent, err := e.agent.scrape(ctx)
	if err != nil {
		return claimPath{}, err
	}
	api, err := apiServerMetrics(ctx, e.cfg)
	if err != nil {
		return claimPath{}, err
	}
	return readPath(agent, api), nil
}

// add adds what happened between from and to, for claims claims.
func (p *claimPath) add(from, to claimPath, claims int) {
	p.claims += float64(claims)
	p.claim.add(from.claim, to.claim)
	p.requests, p.conflicts = p.requests+to.requests-from.requests, p.conflicts+to.conflicts-from.conflicts
	p.writes += to.writes - from.writes
	p.limiterSum, p.limiterN = p.limiterSum+to.limiterSum-from.limiterSum, p.limiterN+to.limiterN-from.limiterN
	p.writeSum, p.writeN = p.writeSum+to.writeSum-from.writeSum, p.writeN+to.writeN-from.writeN
	p.createSum, p.createN = p.createSum+to.createSum-from.createSum, p.createN+to.createN-from.createN
	p.poolPasses += to.poolPasses - from.poolPasses
	p.sandboxesCreated += to.sandboxesCreated - from.sandboxesCreated
	p.statusWrites += to.statusWrites - from.statusWrites
	p.apiCPU, p.agentCPU = p.apiCPU+to.apiCPU-from.apiCPU, p.agentCPU+to.agentCPU-from.agentCPU
}

// figures are the path's figures, without baselines: they say where the claims' time went, not how it
// compares.
func (p *claimPath) figures() []figure {
	ms := meanMs
	per := func(v float64) *float64 { return num(v / p.claims) }
	return []figure{
		{Name: "claim controller passes per claim", Unit: "passes", Dockside: per(p.claim.passes)},
		{Name: "a pass's wait in the claim queue, mean", Unit: "ms", Dockside: ms(p.claim.queueSum, p.claim.queueN)},
		{Name: "a claim pass, mean", Unit: "ms", Dockside: ms(p.claim.passSum, p.claim.passes)},
		{Name: "the agent's API requests per claim (409 conflicts among them)", Unit: "requests", Dockside: per(p.requests),
			Note: fmt.Sprintf("%.1f conflicts", p.conflicts/p.claims)},
		{Name: "the agent's API writes per claim (the rest of its requests are GETs and LISTs)", Unit: "writes", Dockside: per(p.writes)},
		{Name: "the agent's wait for its API token bucket, mean per request", Unit: "ms", Dockside: ms(p.limiterSum, p.limiterN)},
		{Name: "the API server's PATCH of a dockside.dev object, mean", Unit: "ms", Dockside: ms(p.writeSum, p.writeN)},
		{Name: "the API server's create of a SandboxClaim, mean", Unit: "ms", Dockside: ms(p.createSum, p.createN)},
		{Name: "pool passes per claim", Unit: "passes", Dockside: per(p.poolPasses)},
		{Name: "Sandboxes created per claim (refills) before Ready", Unit: "Sandboxes", Dockside: per(p.sandboxesCreated)},
		{Name: "Sandbox status writes per claim (the Sandbox controller's, beside the binding)", Unit: "writes", Dockside: per(p.statusWrites)},
		{Name: "kube-apiserver's CPU per claim", Unit: "ms", Dockside: p.apiCPUPerClaim()},
		{Name: "the agent's CPU per claim", Unit: "ms", Dockside: num(1000 * p.agentCPU / p.claims)},
	}
}

// apiCPUPerClaim is kube-apiserver's CPU time per claim, in milliseconds.
func (p *claimPath) apiCPUPerClaim() *float64 {
	return num(1000 * p.apiCPU / p.claims)
}

// histogramSum adds up the sums of the histograms of name whose labels pass keep (nil keeps all).
func (m metrics) histogramSum(name string, keep func(labels map[string]string) bool) float64 {
	return m.fold(name, keep, sampleSum)
}
