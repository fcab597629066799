package e2b

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process"
	"github.com/dockside-dev/dockside/internal/e2b/envdapi/process/processconnect"
)

// A process started through the gateway is a background process of the processes subresource named
// e2b-<pid>: the pid is the gateway's own number for it, and the name is all that links the two, so that any
// gateway, restarted or not, finds it again (docs/e2b.md, "What maps to what").
const processPrefix = "e2b-"

// cdScript runs its arguments in the directory $0: a process's cwd.
const cdScript = `cd -- "$0" && exec "$@"`

// defaultKeepalive is how often a stream with nothing to say sends a keepalive when the client names no
// interval (Keepalive-Ping-Interval, in seconds).
const defaultKeepalive = 50 * time.Second

// processService serves envd's process.Process.
type processService struct {
	processconnect.UnimplementedProcessHandler
	g *Gateway
}

func processID(pid uint32) string { return processPrefix + strconv.FormatUint(uint64(pid), 10) }

// pidOf reads the pid back from a process's name; ok is false for a process the gateway did not start.
func pidOf(id string) (uint32, bool) {
	s, ok := strings.CutPrefix(id, processPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil && n > 0
}

// selected is the name of the process a selector picks: by pid, the name it was started under; by tag, the
// running process of the gateway's that Start labelled so (the data plane keeps the tag, docs/e2b.md).
func selected(ctx context.Context, p *sandboxPlane, sel *process.ProcessSelector) (string, error) {
	switch s := sel.GetSelector().(type) {
	case *process.ProcessSelector_Pid:
		return processID(s.Pid), nil
	case *process.ProcessSelector_Tag:
		items, err := p.processes(ctx)
		if err != nil {
			return "", connectError(err)
		}
		for _, it := range items {
			if _, ok := pidOf(it.ID); ok && it.Running && it.Tag == s.Tag {
				return it.ID, nil
			}
		}
		return "", connect.NewError(connect.CodeNotFound, fmt.Errorf("no running process has the tag %q", s.Tag))
	}
	return "", connect.NewError(connect.CodeInvalidArgument, errors.New("process is required: select it by pid or tag"))
}

// target is the caller's Sandbox's data plane and the process sel picks in it.
func (s *processService) target(ctx context.Context, sel *process.ProcessSelector) (*sandboxPlane, string, error) {
	_, p, err := s.g.target(ctx)
	if err != nil {
		return nil, "", connectError(err)
	}
	id, err := selected(ctx, p, sel)
	return p, id, err
}

// defaultTerm is the size of a terminal whose Start names none (or a zero side).
var defaultTerm = termSize{cols: 80, rows: 24}

// sizeOf is the terminal size a PTY message asks for.
func sizeOf(pty *process.PTY) termSize {
	size := termSize{cols: pty.GetSize().GetCols(), rows: pty.GetSize().GetRows()}
	if size.cols == 0 {
		size.cols = defaultTerm.cols
	}
	if size.rows == 0 {
		size.rows = defaultTerm.rows
	}
	return size
}

// commandOf is the command line that runs cfg: its environment through env, its directory through sh.
func commandOf(cfg *process.ProcessConfig) []string {
	argv := append([]string{cfg.GetCmd()}, cfg.GetArgs()...)
	if len(cfg.GetEnvs()) > 0 {
		keys := make([]string, 0, len(cfg.GetEnvs()))
		for k := range cfg.GetEnvs() {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		env := []string{"env"}
		for _, k := range keys {
			env = append(env, k+"="+cfg.GetEnvs()[k])
		}
		argv = append(env, argv...)
	}
	if cfg.Cwd != nil && cfg.GetCwd() != "" {
		argv = append([]string{"/bin/sh", "-c", cdScript, cfg.GetCwd()}, argv...)
	}
	return argv
}

// configOf reads commandOf's command line back into what E2B's List reports.
func configOf(argv []string) *process.ProcessConfig {
	cfg := &process.ProcessConfig{}
	if len(argv) >= 4 && argv[0] == "/bin/sh" && argv[1] == "-c" && argv[2] == cdScript {
		cwd := argv[3]
		cfg.Cwd = &cwd
		argv = argv[4:]
	}
	if len(argv) > 1 && argv[0] == "env" && strings.Contains(argv[1], "=") {
		cfg.Envs = map[string]string{}
		argv = argv[1:]
		for len(argv) > 0 && strings.Contains(argv[0], "=") {
			k, v, _ := strings.Cut(argv[0], "=")
			cfg.Envs[k] = v
			argv = argv[1:]
		}
	}
	if len(argv) > 0 {
		cfg.Cmd, cfg.Args = argv[0], argv[1:]
	}
	return cfg
}

func (s *processService) Start(ctx context.Context, req *connect.Request[process.StartRequest], stream *connect.ServerStream[process.StartResponse]) error {
	m := req.Msg
	if m.GetProcess().GetCmd() == "" {
		return connect.NewError(connect.CodeInvalidArgument, errors.New("process.cmd is required"))
	}
	_, p, err := s.g.target(ctx)
	if err != nil {
		return connectError(err)
	}
	pid := uint32(rand.Int32N(1<<31-1000)) + 1000 //nolint:gosec // a name, not a secret
	var tty *termSize
	if m.Pty != nil {
		size := sizeOf(m.GetPty())
		tty = &size
	}
	if err := p.startProcess(ctx, processID(pid), commandOf(m.GetProcess()), m.GetStdin(), m.GetTag(), tty); err != nil {
		return connectError(err)
	}
	send := func(ev *process.ProcessEvent) error { return stream.Send(&process.StartResponse{Event: ev}) }
	if err := send(&process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: pid}}}); err != nil {
		return fmt.Errorf("sending the start: %w", err)
	}
	return s.g.stream(ctx, p, processInfo{ID: processID(pid), TTY: tty != nil}, keepaliveOf(req.Header()), send)
}

func (s *processService) Connect(ctx context.Context, req *connect.Request[process.ConnectRequest], stream *connect.ServerStream[process.ConnectResponse]) error {
	p, id, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return err
	}
	info, err := p.process(ctx, id)
	if err != nil {
		return connectError(err)
	}
	pid, _ := pidOf(id)
	send := func(ev *process.ProcessEvent) error { return stream.Send(&process.ConnectResponse{Event: ev}) }
	if err := send(&process.ProcessEvent{Event: &process.ProcessEvent_Start{Start: &process.ProcessEvent_StartEvent{Pid: pid}}}); err != nil {
		return fmt.Errorf("sending the start: %w", err)
	}
	return s.g.stream(ctx, p, info, keepaliveOf(req.Header()), send)
}

// keepaliveOf is the keepalive interval the client asks for in Keepalive-Ping-Interval (seconds).
func keepaliveOf(h http.Header) time.Duration {
	if n, err := strconv.Atoi(h.Get("Keepalive-Ping-Interval")); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return defaultKeepalive
}

// stream sends the output of process from.ID that comes after from's byte counts as data events (a
// terminal's as pty events, stdout and stderr otherwise), a keepalive whenever keepalive passes without one,
// and its end once it ended and all its output was sent.
func (g *Gateway) stream(ctx context.Context, p *sandboxPlane, from processInfo, keepalive time.Duration, send func(*process.ProcessEvent) error) error {
	id := from.ID
	var mu sync.Mutex
	locked := func(ev *process.ProcessEvent) error {
		mu.Lock()
		defer mu.Unlock()
		return send(ev)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type source struct {
		name string
		from int64
		data func([]byte) *process.ProcessEvent_DataEvent
	}
	sources := []source{
		{"stdout", from.StdoutBytes, func(b []byte) *process.ProcessEvent_DataEvent {
			return &process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Stdout{Stdout: b}}
		}},
		{"stderr", from.StderrBytes, func(b []byte) *process.ProcessEvent_DataEvent {
			return &process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Stderr{Stderr: b}}
		}},
	}
	if from.TTY { // a terminal writes all it shows on stdout, which envd sends as pty data
		sources = []source{{"stdout", from.StdoutBytes, func(b []byte) *process.ProcessEvent_DataEvent {
			return &process.ProcessEvent_DataEvent{Output: &process.ProcessEvent_DataEvent_Pty{Pty: b}}
		}}}
	}
	errs := make(chan error, len(sources))
	for _, s := range sources {
		go func() {
			errs <- followAll(ctx, p, id, s.name, s.from, func(b []byte) error {
				return locked(&process.ProcessEvent{Event: &process.ProcessEvent_Data{Data: s.data(b)}})
			})
		}()
	}
	tick := time.NewTicker(keepalive)
	defer tick.Stop()
	for done := 0; done < len(sources); {
		select {
		case err := <-errs:
			if err != nil {
				return connectError(err)
			}
			done++
		case <-tick.C:
			if err := locked(&process.ProcessEvent{Event: &process.ProcessEvent_Keepalive{Keepalive: &process.ProcessEvent_KeepAlive{}}}); err != nil {
				return fmt.Errorf("sending a keepalive: %w", err)
			}
		case <-ctx.Done():
			return connectError(ctx.Err())
		}
	}
	info, err := p.process(ctx, id)
	if err != nil {
		return connectError(err)
	}
	return locked(&process.ProcessEvent{Event: &process.ProcessEvent_End{End: endOf(info)}})
}

// followAll follows one stream of the process until the process ended and everything it wrote was read.
func followAll(ctx context.Context, p *sandboxPlane, id, stream string, from int64, out func([]byte) error) error {
	for {
		before := from
		var err error
		if from, err = p.follow(ctx, id, stream, from, out); err != nil {
			return err
		}
		info, err := p.process(ctx, id)
		if err != nil {
			return err
		}
		written := info.StdoutBytes
		if stream == "stderr" {
			written = info.StderrBytes
		}
		// Once it ended, a follow that brought nothing new has sent all that is kept.
		if !info.Running && (from >= written || from == before) {
			return nil
		}
	}
}

// endOf is E2B's end event of a process that ended: its exit code, or why it ended otherwise.
func endOf(info processInfo) *process.ProcessEvent_EndEvent {
	end := &process.ProcessEvent_EndEvent{}
	if info.ExitCode != nil {
		end.ExitCode = int32(*info.ExitCode) //nolint:gosec // exit codes are small
		end.Exited = true
		end.Status = fmt.Sprintf("exit status %d", *info.ExitCode)
	}
	if info.Error != "" {
		e := info.Error
		end.Error = &e
		if end.Status == "" {
			end.Status = e
		}
	}
	return end
}

func (s *processService) List(ctx context.Context, _ *connect.Request[process.ListRequest]) (*connect.Response[process.ListResponse], error) {
	_, p, err := s.g.target(ctx)
	if err != nil {
		return nil, connectError(err)
	}
	items, err := p.processes(ctx)
	if err != nil {
		return nil, connectError(err)
	}
	out := &process.ListResponse{}
	for _, it := range items {
		pid, ok := pidOf(it.ID)
		if !ok || !it.Running {
			continue
		}
		info := &process.ProcessInfo{Pid: pid, Config: configOf(it.Command)}
		if it.Tag != "" {
			info.Tag = &it.Tag
		}
		out.Processes = append(out.Processes, info)
	}
	return connect.NewResponse(out), nil
}

func (s *processService) SendSignal(ctx context.Context, req *connect.Request[process.SendSignalRequest]) (*connect.Response[process.SendSignalResponse], error) {
	var sig string
	switch req.Msg.GetSignal() {
	case process.Signal_SIGNAL_SIGKILL:
		sig = "KILL"
	case process.Signal_SIGNAL_SIGTERM:
		sig = "TERM"
	default:
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("signal must be SIGTERM or SIGKILL"))
	}
	p, id, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := p.signal(ctx, id, sig); err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&process.SendSignalResponse{}), nil
}

func (s *processService) SendInput(ctx context.Context, req *connect.Request[process.SendInputRequest]) (*connect.Response[process.SendInputResponse], error) {
	p, id, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := s.input(ctx, p, id, req.Msg.GetInput()); err != nil {
		return nil, err
	}
	return connect.NewResponse(&process.SendInputResponse{}), nil
}

// input writes one input message to the process's standard input, which is its terminal's for a PTY: what
// is typed into it.
func (s *processService) input(ctx context.Context, p *sandboxPlane, id string, in *process.ProcessInput) error {
	data := in.GetStdin()
	if pty, ok := in.GetInput().(*process.ProcessInput_Pty); ok {
		data = pty.Pty
	}
	if err := p.stdin(ctx, id, data, false); err != nil {
		return connectError(err)
	}
	return nil
}

func (s *processService) StreamInput(ctx context.Context, stream *connect.ClientStream[process.StreamInputRequest]) (*connect.Response[process.StreamInputResponse], error) {
	var p *sandboxPlane
	var id string
	for stream.Receive() {
		switch ev := stream.Msg().GetEvent().(type) {
		case *process.StreamInputRequest_Start:
			var err error
			if p, id, err = s.target(ctx, ev.Start.GetProcess()); err != nil {
				return nil, err
			}
		case *process.StreamInputRequest_Data:
			if p == nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the stream must start with the process it writes to"))
			}
			if err := s.input(ctx, p, id, ev.Data.GetInput()); err != nil {
				return nil, err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&process.StreamInputResponse{}), nil
}

func (s *processService) CloseStdin(ctx context.Context, req *connect.Request[process.CloseStdinRequest]) (*connect.Response[process.CloseStdinResponse], error) {
	p, id, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if err := p.stdin(ctx, id, nil, true); err != nil {
		return nil, connectError(err)
	}
	return connect.NewResponse(&process.CloseStdinResponse{}), nil
}

// Update resizes the process's terminal; without a pty it changes nothing, as envd's.
func (s *processService) Update(ctx context.Context, req *connect.Request[process.UpdateRequest]) (*connect.Response[process.UpdateResponse], error) {
	p, id, err := s.target(ctx, req.Msg.GetProcess())
	if err != nil {
		return nil, err
	}
	if req.Msg.Pty != nil {
		if err := p.resize(ctx, id, sizeOf(req.Msg.GetPty())); err != nil {
			return nil, connectError(err)
		}
	}
	return connect.NewResponse(&process.UpdateResponse{}), nil
}
