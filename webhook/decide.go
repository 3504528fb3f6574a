package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pullwright/pullwright/task"
)

// Decide turns one event that came from a trusted place rather than over
// HTTP (the event file of a GitHub Actions run, written by the runner) into
// at most one task, and says why, with the same rules as a delivery: who
// wrote it, which command, which bots are heard. Nothing is recorded: the
// caller records the task, after restoring whatever the task needs.
func (h *Handler) Decide(d task.Delivery, payload []byte) (*task.Task, string, error) {
	var p event
	if err := json.Unmarshal(payload, &p); err != nil {
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) || h.actor(d.Event) != nil {
			return nil, "", fmt.Errorf("decode the %s event: %w", d.Event, err)
		}
	}
	d.Action = p.Action
	t, why := h.decide(d, &p)
	return t, why, nil
}

// Record commits the delivery and the task decided for it (why says why),
// and returns what was recorded. A fix asked while the conversation has an
// active one, or a review while the pull request has one, is recorded as a
// busy task instead, which the worker answers by linking the running task.
func Record(ctx context.Context, rec Recorder, d task.Delivery, t *task.Task, why string) (*task.Task, string, error) {
	err := rec.Record(ctx, d, t)
	if errors.Is(err, task.ErrActive) && t != nil && (t.Kind == task.KindFix || t.Kind == task.KindReview) {
		busy := *t
		busy.Kind, busy.Instructions = task.KindBusy, ""
		if t.Kind == task.KindReview {
			busy.Refused = task.KindReview
		}
		t, why = &busy, "already_active"
		err = rec.Record(ctx, d, t)
	}
	return t, why, err
}
