package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsd/toolsd/registry"
)

// todoKey is the session state key of the todo list.
const todoKey = "todos"

// Todo is one item of a session's todo list.
type Todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
	ID       string `json:"id"`
}

const todoWriteDescription = `Writes the session's todo list: the whole list each time (it replaces the previous one).

Use it to plan and track work with several steps: when a task needs three or more distinct steps, when the person gives a list of things to do, or when new steps come up along the way. Skip it for a single, simple task.

Each item: content (what to do, imperative and specific), status (pending, in_progress, completed, cancelled), priority (high, medium, low) and a unique id. Keep exactly one item in_progress while working; mark an item completed as soon as it is done, not in batches; cancel items that became unnecessary instead of dropping them.`

const todoReadDescription = `Reads the session's todo list as todowrite last wrote it. Use it to see what is still pending before choosing what to do next.`

func todoItemSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"content":  map[string]any{"type": "string", "minLength": 1, "description": "What to do."},
			"status":   map[string]any{"type": "string", "enum": []string{"pending", "in_progress", "completed", "cancelled"}, "description": "pending, in_progress, completed or cancelled."},
			"priority": map[string]any{"type": "string", "enum": []string{"high", "medium", "low"}, "description": "high, medium or low."},
			"id":       map[string]any{"type": "string", "minLength": 1, "description": "A unique id of the item."},
		},
		"required":             []string{"content", "status", "priority", "id"},
		"additionalProperties": false,
	}
}

func todoWriteTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"todos", map[string]any{"type": "array", "items": todoItemSchema(), "description": "The whole updated todo list."}},
		},
		required: []string{"todos"},
	}
	return &registry.Tool{
		ID:          "todowrite",
		Description: todoWriteDescription,
		Parameters:  s.raw(),
		Permission:  "todowrite",
		// It changes only the session's own todo list, nothing in the workspace or
		// outside: the default policy need not ask.
		ReadOnly: true,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				Todos []Todo `json:"todos"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			if a.Todos == nil {
				a.Todos = []Todo{}
			}
			seen := map[string]bool{}
			for _, t := range a.Todos {
				if seen[t.ID] {
					return nil, fmt.Errorf("todo id %q is used twice: give every item its own id", t.ID)
				}
				seen[t.ID] = true
			}
			if call.State == nil {
				return nil, errors.New("this session keeps no todo list")
			}
			if err := call.Ask(ctx, registry.AskRequest{Permission: "todowrite", Patterns: []string{"*"}}); err != nil {
				return nil, err
			}
			b, err := json.Marshal(a.Todos)
			if err != nil {
				return nil, err
			}
			if err := call.State.Put(ctx, todoKey, b); err != nil {
				return nil, fmt.Errorf("cannot save the todo list: %w", err)
			}
			return todoResult(a.Todos), nil
		},
	}
}

func todoReadTool(o *Options) *registry.Tool {
	return &registry.Tool{
		ID:          "todoread",
		Description: todoReadDescription,
		Parameters:  schema{}.raw(),
		Permission:  "todoread",
		ReadOnly:    true,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			if call.State == nil {
				return nil, errors.New("this session keeps no todo list")
			}
			if err := call.Ask(ctx, registry.AskRequest{Permission: "todoread", Patterns: []string{"*"}}); err != nil {
				return nil, err
			}
			todos, err := readTodos(ctx, call.State)
			if err != nil {
				return nil, err
			}
			return todoResult(todos), nil
		},
	}
}

// readTodos returns the session's todo list (empty when none was written).
func readTodos(ctx context.Context, st registry.SessionState) ([]Todo, error) {
	b, err := st.Get(ctx, todoKey)
	if err != nil {
		return nil, fmt.Errorf("cannot read the todo list: %w", err)
	}
	todos := []Todo{}
	if len(b) > 0 {
		if err := json.Unmarshal(b, &todos); err != nil {
			return nil, fmt.Errorf("the stored todo list is damaged: %v; write it again with todowrite", err)
		}
	}
	return todos, nil
}

func todoResult(todos []Todo) *registry.Result {
	open := 0
	for _, t := range todos {
		if t.Status != "completed" && t.Status != "cancelled" {
			open++
		}
	}
	b, _ := json.MarshalIndent(todos, "", "  ")
	out := string(b)
	if len(todos) == 0 {
		out = "[]\n(The todo list is empty.)"
	}
	var items []any
	for _, t := range todos {
		items = append(items, map[string]any{"content": t.Content, "status": t.Status, "priority": t.Priority, "id": t.ID})
	}
	if items == nil {
		items = []any{}
	}
	return &registry.Result{
		Title:    fmt.Sprintf("%d todos", open),
		Output:   strings.TrimSpace(out),
		Metadata: map[string]any{"todos": items, "open": open},
	}
}
