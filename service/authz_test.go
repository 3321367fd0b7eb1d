package service

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	metadv1 "metad/proto/metadv1"
)

// TestEveryMethodHasRule: every method of the Metadata and Admin services has a rule (deny by
// default would refuse a new method to everyone, admin included), the table names no method the
// services lack, and every tenant-scoped or worker-scoped method's request has the field its rule
// reads.
func TestEveryMethodHasRule(t *testing.T) {
	seen := map[string]bool{}
	for _, fd := range []protoreflect.FileDescriptor{metadv1.File_metadv1_metadata_proto, metadv1.File_metadv1_admin_proto} {
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			for j := 0; j < sd.Methods().Len(); j++ {
				md := sd.Methods().Get(j)
				full := fmt.Sprintf("/%s/%s", sd.FullName(), md.Name())
				seen[full] = true
				r, ok := methodRules[full]
				if !ok {
					t.Errorf("%s has no rule", full)
					continue
				}
				in := md.Input().Fields()
				switch r {
				case ruleTenant:
					if f := in.ByName(tenantField); f == nil || f.Kind() != protoreflect.StringKind || f.IsList() {
						t.Errorf("%s is tenant-scoped, and its request %s has no string field %q", full, md.Input().FullName(), tenantField)
					}
				case ruleWorker:
					if f := in.ByName("client_id"); f == nil || f.Kind() != protoreflect.BytesKind || f.IsList() {
						t.Errorf("%s is worker-scoped, and its request %s has no bytes field client_id", full, md.Input().FullName())
					}
				}
			}
		}
	}
	for m := range methodRules {
		if !seen[m] {
			t.Errorf("the rules name %s, which neither service has", m)
		}
	}
}
