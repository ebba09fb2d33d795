package permission

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// Class 1 of the hostile review: bash evaluates a variable's value as code in more places
// than $(( )) — arithmetic contexts, subscripts, [[ ]], declare -i, ${x@P}, ${!x}, test -v,
// read, printf -v, namerefs — and the value can be assembled at run time, so no search of
// the text for "$(" can see it. The generator below crosses every evaluation context with
// every way to build the payload, runs each line in a real bash to keep only the lines
// that really run the payload, and checks that each of those asks even where every command
// is allowed, with nothing offered to remember.

// evalContexts use the variable v, which holds the payload; each runs it in bash 5.
var evalContexts = []string{
	`declare "$v=1"`,
	`declare -i y="$v"`,
	`typeset -i y="$v"`,
	`f(){ local -i y="$v"; }; f`,
	`let "y=$v"`,
	`let y=v`,
	`(( v ))`,
	`(( y = v + 1 ))`,
	`echo $(( v ))`,
	`echo $(( $v ))`,
	`echo $[v]`,
	`[[ $v -eq 1 ]]`,
	`[[ v -lt 1 ]]`,
	`[[ -v $v ]]`,
	`a=(); echo "${a[$v]}"`,
	`a[$v]=1`,
	`a=(1); echo ${a[@]:v}`,
	`arr=(); echo ${#arr[v]}`,
	`declare -a z; z[v]=1`,
	`y=(); y+=([$v]=1)`,
	`echo "${!v}"`,
	`echo "${v@P}"`,
	`s=abc; echo "${s:v:1}"`,
	`test -v "$v"`,
	`[ -v "$v" ]`,
	`read "$v" <<< 1`,
	`printf -v "$v" x`,
	`for ((i=v; i<0; i++)); do :; done`,
	`declare -n r="$v"; r=1`,
	`case 1 in $((v))) :;; esac`,
	`echo ok; (( v )) && echo more`,
	`bash -c '(( v ))'`,
}

// payloadBuilders set v to the payload a[$(touch M)] in different ways (the last one
// leaves it to the environment). A builder writes only in lowercase names, which the
// analysis accepts, so that what makes each line ask is the evaluation context.
var payloadBuilders = []string{
	`v='a[$(touch M)]'; `,
	`p='a[$(tou'; q='ch M)]'; v=$p$q; `,
	`v=$'a[\x24(touch M)]'; `,
	`v=$'a[\044(touch M)]'; `,
	`v=$(printf 'a[%s(touch M)]' '$'); `,
	`v=$(cat payload); `,
	`v="a[\$(touch M)]"; `,
	`v=a\[\$\(touch\ M\)\]; `,
	`d='$'; v="a[${d}(touch M)]"; `,
	``, // v comes from the environment
}

func TestEvaluationContextsAsk(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to check the generator against")
	}
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	engines := map[string]*Engine{}
	for name, cfg := range map[string]string{
		"everything allowed": `{"bash": {"*": "allow"}}`,
		"careful user": `{"bash": {"*": "ask", "echo *": "allow", "cat *": "allow", "ls*": "allow", "printf *": "allow",
			"test *": "allow", "read *": "allow", "declare *": "allow", "let *": "allow", "bash *": "allow", "touch *": "allow"}}`,
	} {
		engines[name] = newEngine(t, nil, map[string]string{LayerUser: cfg})
	}
	// Run every generated line in its own folder, eight at a time.
	type gen struct {
		line string
		dir  string
		ran  bool
	}
	var lines []*gen
	root := t.TempDir()
	for _, b := range payloadBuilders {
		for _, c := range evalContexts {
			g := &gen{line: b + c, dir: filepath.Join(root, strconv.Itoa(len(lines)))}
			if err := os.Mkdir(g.dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(g.dir, "payload"), []byte("a[$(touch M)]"), 0o600); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, g)
		}
	}
	work := make(chan *gen)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				cmd := exec.Command(bash, "-c", g.line)
				cmd.Dir = g.dir
				cmd.Env = append(os.Environ(), "v=a[$(touch M)]")
				_ = cmd.Run()
				_, err := os.Stat(filepath.Join(g.dir, "M"))
				g.ran = err == nil
			}
		}()
	}
	for _, g := range lines {
		work <- g
	}
	close(work)
	wg.Wait()
	executed := 0
	for _, g := range lines {
		if !g.ran {
			continue // bash did not run the payload: not an attack
		}
		executed++
		line := g.line
		for name, e := range engines {
			d := e.DecideShell("s", "", line, ws, ws)
			if d.Action == Allow {
				b, _ := json.MarshalIndent(d, "", "  ")
				t.Errorf("%s: %q runs its hidden payload without an ask:\n%s", name, line, b)
				continue
			}
			for _, rq := range d.Requests {
				if rq.Permission == KeyBash && (!rq.Opaque || len(rq.Always) > 0) {
					t.Errorf("%s: %q: bash request %+v is not opaque (an always answer could match it)", name, line, rq)
				}
			}
		}
	}
	if executed < len(payloadBuilders)*len(evalContexts)*2/3 {
		t.Fatalf("only %d of %d generated lines ran their payload in bash: the generator is broken", executed, len(payloadBuilders)*len(evalContexts))
	}
	t.Logf("%d generated lines run a hidden payload in bash; each asks", executed)
}
