package dockerdriver

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

const (
	eventsBackoffMin = 250 * time.Millisecond
	eventsBackoffMax = 30 * time.Second
)

// eventActions are the container actions the stream carries. health_status is matched by prefix by the
// daemon (its actions read "health_status: healthy").
var eventActions = []EventType{EventStart, EventDie, EventOOM, EventHealth, EventPause, EventUnpause, EventDestroy}

// Events streams lifecycle events of this node's labelled containers until ctx ends. A broken stream is
// resubscribed with backoff, from the time it broke (the daemon replays what it still holds), and
// followed by an EventResync so the consumer relists whatever was lost anyway.
func (d *Docker) Events(ctx context.Context) <-chan Event {
	out := make(chan Event, 64)
	go d.followEvents(ctx, out)
	return out
}

func (d *Docker) followEvents(ctx context.Context, out chan<- Event) {
	defer close(out)
	since := time.Now()
	backoff := eventsBackoffMin
	for resumed := false; ; resumed = true {
		if resumed && !d.awaitDaemon(ctx, &backoff) {
			return
		}
		subscribed := time.Now()
		msgs, errs := d.cli.Events(ctx, events.ListOptions{
			Since:   fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()),
			Filters: d.eventFilter(),
		})
		if resumed {
			// The line an operator looks for after a daemon restart: the agent is following Docker again.
			d.log.Info("Docker event stream resubscribed; looking everything over for what was missed", "node", d.node)
			if !send(ctx, out, Event{Type: EventResync, Time: subscribed}) {
				return
			}
		}
		if !forwardEvents(ctx, msgs, errs, out) {
			return
		}
		since = time.Now()
		if time.Since(subscribed) > eventsBackoffMax {
			backoff = eventsBackoffMin // the stream was healthy for a while: this is a fresh failure
		}
		d.log.Info("Docker event stream broke; resubscribing", "node", d.node)
	}
}

// forwardEvents copies events until the stream breaks (true) or ctx ends (false).
func forwardEvents(ctx context.Context, msgs <-chan events.Message, errs <-chan error, out chan<- Event) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-errs:
			return ctx.Err() == nil
		case m := <-msgs:
			if !send(ctx, out, toEvent(m)) {
				return false
			}
		}
	}
}

// awaitDaemon waits with growing backoff until the daemon answers a ping; false when ctx ends.
func (d *Docker) awaitDaemon(ctx context.Context, backoff *time.Duration) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(*backoff):
		}
		*backoff = min(*backoff*2, eventsBackoffMax)
		if _, err := d.cli.Ping(ctx); err == nil {
			return true
		}
	}
}

func (d *Docker) eventFilter() filters.Args {
	f := d.labelFilter(nil)
	f.Add("type", string(events.ContainerEventType))
	for _, a := range eventActions {
		f.Add("event", string(a))
	}
	return f
}

// toEvent maps a Docker event to the driver's; container events carry the container's labels as attributes.
func toEvent(m events.Message) Event {
	attrs := m.Actor.Attributes
	owner, role, service := OwnerFromLabels(attrs)
	action, health, _ := strings.Cut(string(m.Action), ":")
	ev := Event{
		Type: EventType(action), Container: attrs["name"], ID: m.Actor.ID,
		Owner: owner, Role: role, Service: service,
		Health: strings.TrimSpace(health), Time: time.Unix(0, m.TimeNano),
	}
	if ev.Type == EventDie {
		ev.ExitCode, _ = strconv.Atoi(attrs["exitCode"])
	}
	return ev
}

func send(ctx context.Context, out chan<- Event, ev Event) bool {
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}
