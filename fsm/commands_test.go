package fsm

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	metadv1 "metad/proto/metadv1"
	"metad/store"
)

var updateLevels = flag.Bool("update-levels", false, "rewrite testdata/levels.txt from the command table (only when adding a new feature level)")

// TestEveryCommandDeclared: every operation of the Command oneof has one declaration, and each
// declaration has a check or a stated reason for having none, and a released feature level.
func TestEveryCommandDeclared(t *testing.T) {
	fields := commandOp.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		sp, ok := byField[fd.Number()]
		if !ok {
			t.Errorf("command %s (field %d) is not declared in fsm/commands.go", fd.Name(), fd.Number())
			continue
		}
		if (sp.check == nil) == (sp.noCheck == "") {
			t.Errorf("command %s: declare a check (def) or say why it has none (defNoCheck); a refusal with no check costs a log entry", sp.name)
		}
		if sp.level < 1 || sp.level > FeatureLevel {
			t.Errorf("command %s: feature level %d not in 1..FeatureLevel (%d)", sp.name, sp.level, FeatureLevel)
		}
	}
	if len(commands) != fields.Len() {
		t.Errorf("%d declarations for %d commands", len(commands), fields.Len())
	}
}

// levelsFile is the record of the released feature levels: for each level, the commands it
// introduced, sorted.
const levelsFile = "testdata/levels.txt"

func levelLines() []string {
	by := map[uint32][]string{}
	for _, c := range commands {
		by[c.level] = append(by[c.level], string(c.name))
	}
	var out []string
	for l := uint32(1); l <= FeatureLevel; l++ {
		slices.Sort(by[l])
		out = append(out, fmt.Sprintf("level %d: %s", l, strings.Join(by[l], " ")))
	}
	return out
}

// TestFeatureLevelsAreReleased: the commands of each feature level are those recorded in
// testdata/levels.txt. A released level never gains a command (a member of that level would meet
// a command it does not know): a new command takes a new level, FeatureLevel + 1, and
// `go test ./fsm/ -run TestFeatureLevelsAreReleased -args -update-levels` records it.
func TestFeatureLevelsAreReleased(t *testing.T) {
	got := levelLines()
	if *updateLevels {
		if err := os.WriteFile(levelsFile, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(levelsFile)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(want):
			t.Errorf("feature level %d is not recorded in %s (run with -update-levels once the level is new): %s", i+1, levelsFile, got[i])
		case i >= len(got):
			t.Errorf("%s records level %d, above FeatureLevel %d", levelsFile, i+1, FeatureLevel)
		case got[i] != want[i]:
			t.Errorf("feature level %d changed: the table says\n  %s\nthe released record says\n  %s\n"+
				"a released level never gains or loses a command: declare a new command at FeatureLevel+1", i+1, got[i], want[i])
		}
	}
}

// notKept are the store.Result fields that a session's kept answer does not carry, and why.
var notKept = map[string]string{
	"Units": "Evict only, and the evictor proposes in no session",
}

// fill sets every field of v (recursively) to a value that is not zero: slices and pointers hold
// one filled element, numbers are n, strings name their field. A slice of the type that holds it
// (Result.Items) is filled one level deep.
func fill(v reflect.Value, n uint64, path string) {
	if v.Kind() == reflect.Slice && strings.Count(path, "[0]") > 0 && v.Type().Elem() == reflect.TypeFor[store.Result]() {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if _, skip := notKept[f.Name]; !f.IsExported() || skip && v.Type() == reflect.TypeFor[store.Result]() {
				continue
			}
			fill(v.Field(i), n+uint64(i), path+"."+f.Name)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), n, path+"[0]")
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n, path)
		v.Set(p)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n+uint64(i), path)
		}
	case reflect.String:
		v.SetString(path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n%100 + 1))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(n%3 + 1) // small: enums (tiers, statuses, kinds) start at 1
	default:
		panic(fmt.Sprintf("fill: %s: kind %s", path, v.Kind()))
	}
}

// TestResultSurvivesKeptAnswer: a session keeps every applied command's result encoded
// (encodeResult, wire.ResultTo) and answers a retry with it decoded (wire.ResultFrom). Every
// field of store.Result, nested ones included, must come back as it was, or be listed in notKept
// with its reason: a new field that wire does not carry would give a retry a truncated answer.
func TestResultSurvivesKeptAnswer(t *testing.T) {
	var r store.Result
	rv := reflect.ValueOf(&r).Elem()
	fill(rv, 0, "")
	// Enumerations at values wire knows (fill's 1..3 need not be one).
	r.Reason = store.KeyAlreadyExists
	r.Replicas[0].Status = store.Complete
	r.Items[0].Reason = store.ObjectNotFound
	r.Items[0].Replicas[0].Status = store.Processing
	got, err := decodeResult(encodeResult(r))
	if err != nil {
		t.Fatal(err)
	}
	gv := reflect.ValueOf(got)
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if _, skip := notKept[name]; skip {
			continue
		}
		if !reflect.DeepEqual(gv.Field(i).Interface(), rv.Field(i).Interface()) {
			t.Errorf("store.Result.%s does not survive a kept answer (wire.ResultTo / ResultFrom):\n got  %+v\n want %+v",
				name, gv.Field(i).Interface(), rv.Field(i).Interface())
		}
	}
}

// TestDesignListsEveryCommand: docs/design.md's table of commands names each declared command
// once, by its Command field name, with its feature level.
func TestDesignListsEveryCommand(t *testing.T) {
	raw, err := os.ReadFile("../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
		if len(cells) < 3 || !strings.HasPrefix(strings.TrimSpace(cells[0]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if commandOp.Fields().ByName(protoreflect.Name(name)) != nil {
			rows[name] = strings.TrimSpace(cells[1])
		}
	}
	for _, c := range commands {
		lvl, ok := rows[string(c.name)]
		if !ok {
			t.Errorf("docs/design.md's command table has no row for `%s`", c.name)
			continue
		}
		if lvl != fmt.Sprint(c.level) {
			t.Errorf("docs/design.md: `%s` at level %q, declared at %d", c.name, lvl, c.level)
		}
	}
}

// TestContentLevel: an older command whose fields name the DISK or DFS tier, or ask for DFS
// replicas, needs the replica tiers' level (a member below it would refuse the tier, or ignore
// the field, where the others apply it); the same command without them keeps its own level.
func TestContentLevel(t *testing.T) {
	disk, dfs := metadv1.Tier_TIER_DISK, metadv1.Tier_TIER_DFS
	for _, tc := range []struct {
		name string
		cmd  *metadv1.Command
		want uint32
	}{
		{"mount memory", &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
			Segment: &metadv1.SegmentDesc{Tier: metadv1.Tier_TIER_MEMORY}}}}, levelBase},
		{"mount DISK", &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
			Segment: &metadv1.SegmentDesc{Tier: disk}}}}, levelLocalDisk},
		{"mount DFS", &metadv1.Command{Op: &metadv1.Command_MountSegment{MountSegment: &metadv1.MountSegment{
			Segment: &metadv1.SegmentDesc{Tier: dfs}}}}, levelLocalDisk},
		{"put NOF", &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{
			Config: &metadv1.ReplicaConfig{NofReplicas: 1}}}}, levelBase},
		{"put DFS", &metadv1.Command{Op: &metadv1.Command_PutStart{PutStart: &metadv1.PutStart{
			Config: &metadv1.ReplicaConfig{DfsReplicas: 1}}}}, levelLocalDisk},
		{"upsert DFS", &metadv1.Command{Op: &metadv1.Command_UpsertStart{UpsertStart: &metadv1.UpsertStart{
			Config: &metadv1.ReplicaConfig{DfsReplicas: 2}}}}, levelLocalDisk},
		{"batch put DFS", &metadv1.Command{Op: &metadv1.Command_BatchPutStart{BatchPutStart: &metadv1.BatchPutStart{
			Config: &metadv1.ReplicaConfig{DfsReplicas: 1}}}}, levelLocalDisk},
		{"put end all", &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{}}}, levelBase},
		{"put end DISK", &metadv1.Command{Op: &metadv1.Command_PutEnd{PutEnd: &metadv1.PutEnd{Tier: disk}}}, levelLocalDisk},
		{"batch revoke DFS", &metadv1.Command{Op: &metadv1.Command_BatchPutRevoke{BatchPutRevoke: &metadv1.BatchPutRevoke{Tier: dfs}}}, levelLocalDisk},
		{"commit DISK", &metadv1.Command{Op: &metadv1.Command_PutCommit{PutCommit: &metadv1.PutCommit{Tier: disk}}}, levelLocalDisk},
		{"commit all", &metadv1.Command{Op: &metadv1.Command_PutCommit{PutCommit: &metadv1.PutCommit{}}}, levelArenas},
		{"evict memory", &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{Tier: metadv1.Tier_TIER_MEMORY}}}, levelBase},
		{"evict DFS", &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{Tier: dfs}}}, levelLocalDisk},
		{"evict redundant memory replicas", &metadv1.Command{Op: &metadv1.Command_Evict{Evict: &metadv1.Evict{Tier: metadv1.Tier_TIER_MEMORY, Redundant: true}}}, levelLocalDisk},
	} {
		if got := LevelOf(tc.cmd); got != tc.want {
			t.Errorf("%s: LevelOf = %d, want %d", tc.name, got, tc.want)
		}
	}
}
