// Writes fortran_entries.cc: the Fortran entry points of every row of mpi_calls.def, read through
// the same macros as the C entry points (the preprocessor hands over each row's name and parameter
// list as text). Each entry point takes the Fortran arguments (all by reference, then IERROR),
// converts them (fortran.h) and calls interpose::call_<name>, the C entry point's body, so a call
// behaves the same from either language. With Open MPI it is exported under the names Fortran
// compilers give `MPI_<NAME>` (mpi_<name>_, mpi_<name>__, mpi_<name>, MPI_<NAME>) and, for its
// mpi_f08 module, mpi_<name>_f08_ (same arguments there, IERROR optional); with MPICH as
// mpi_<name>_f08_ alone, for the calls without a buffer (fortran.h says why).
//
// Each parameter is converted by its C type and, where the type alone does not say, its name
// (fortran_gen.cc's `classify`). A row with a parameter of a kind not known here gets no Fortran
// entry point (its Fortran calls stay the MPI library's own) and is named on stderr and in the
// output, so a new row never breaks the build.
#include <cctype>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Row {
  const char* name;
  const char* params;
  bool always;
};

const Row kRows[] = {
#define MPIZIP_CALL(name, params, args, comm, bytes, handler) {#name, #params, false},
#define MPIZIP_CALL_ALWAYS(name, params, args, handler) {#name, #params, true},
#include "src/interpose/mpi_calls.def"
#undef MPIZIP_CALL
#undef MPIZIP_CALL_ALWAYS
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\n"), e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

struct Param {
  std::string type;  // "const void*", "int", "MPI_Request*", "const MPI_Datatype" ...
  std::string name;
  bool array = false;
};

// "(const void* buf, int count, MPI_Request requests[])" -> its parameters; "(void)" -> none.
std::vector<Param> parse(const std::string& text) {
  std::vector<Param> out;
  std::string inner = trim(text);
  if (inner.size() >= 2 && inner.front() == '(') inner = inner.substr(1, inner.size() - 2);
  if (trim(inner) == "void" || trim(inner).empty()) return out;
  size_t start = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    if (i != inner.size() && inner[i] != ',') continue;
    std::string p = trim(inner.substr(start, i - start));
    start = i + 1;
    Param q;
    if (p.size() > 2 && p.compare(p.size() - 2, 2, "[]") == 0) {
      q.array = true;
      p = trim(p.substr(0, p.size() - 2));
    }
    size_t n = p.size();
    while (n > 0 && (std::isalnum(static_cast<unsigned char>(p[n - 1])) || p[n - 1] == '_')) --n;
    q.name = p.substr(n);
    std::string type;
    for (char c : trim(p.substr(0, n))) {
      if (c == '*' && !type.empty() && type.back() == ' ') type.pop_back();
      type += c;
    }
    q.type = type;
    out.push_back(q);
  }
  return out;
}

// The MPI handle kinds and their conversions ("Type" for MPI_Datatype, as MPI names them).
bool handle_kind(const std::string& type, std::string* kind) {
  static const char* kKinds[] = {"Comm", "Op",  "Info", "Group", "Request",
                                 "Errhandler", "Win", "File", "Message"};
  std::string t = type;
  if (t.rfind("const ", 0) == 0) t = t.substr(6);
  if (t == "MPI_Datatype") {
    *kind = "Type";
    return true;
  }
  for (const char* k : kKinds) {
    if (t == std::string("MPI_") + k) {
      *kind = k;
      return true;
    }
  }
  return false;
}

std::string f2c(const std::string& kind, const std::string& f) {
  if (kind == "Message") return "fortran::message_f2c(" + f + ")";
  return "MPI_" + kind + "_f2c(" + f + ")";
}
std::string c2f(const std::string& kind, const std::string& c, const std::string& previous) {
  if (kind == "Message") return "fortran::message_c2f(" + c + ", " + previous + ")";
  return "MPI_" + kind + "_c2f(" + c + ")";
}

// One parameter's part of an entry point.
struct Piece {
  std::string decl;  // the Fortran argument ("" where Fortran has none)
  std::string pre;   // statements before the call
  std::string arg;   // the C argument
  std::string post;  // statements after it, whatever it returned
  std::string ok;    // after it, when it succeeded
  std::string multi; // after it, when it succeeded or returned MPI_ERR_IN_STATUS
};

struct Entry {
  std::vector<Piece> pieces;
  bool buffer = false;  // the call takes a choice buffer
  std::string why_not;  // non-empty: no Fortran entry point for this row
};

const Param* find(const std::vector<Param>& ps, const char* name) {
  for (const Param& p : ps)
    if (p.name == name) return &p;
  return nullptr;
}

Entry classify(const Row& row) {
  Entry e;
  const std::vector<Param> ps = parse(row.params);
  const std::string name = row.name;
  // Point-to-point calls take no MPI_IN_PLACE (Open MPI's and MPICH's own Fortran layers convert
  // only MPI_BOTTOM there).
  bool p2p = false;
  for (const Param& p : ps)
    if (p.name == "dest" || p.name == "source" || p.type.find("MPI_Message") != std::string::npos)
      p2p = true;
  // The length of request, status and index arrays: the call's count.
  const Param* count = find(ps, "count");
  if (count == nullptr) count = find(ps, "incount");
  const std::string n_expr = count != nullptr ? "*" + count->name : "";
  const Param* comm = find(ps, "comm");
  for (const Param& p : ps) {
    Piece x;
    const std::string& n = p.name;
    const std::string c = "c_" + n;
    std::string kind;
    if (n == "buffer_addr") {
      // MPI_BUFFER_DETACH's BUFFER_ADDR is the buffer in Fortran, where the C call returns its
      // address: the C call writes into a pointer of its own (as the MPI libraries' bindings do).
      x.decl = "void* " + n;
      x.pre = "void* " + c + " = nullptr;";
      x.arg = "&" + c;
      e.buffer = true;
    } else if (p.type == "const void*" || p.type == "void*") {
      x.decl = "void* " + n;
      x.arg = std::string("fortran::buffer(") + n + (p2p ? ", false)" : ", true)");
      e.buffer = true;
    } else if ((p.type == "int*" && n == "argc") || (p.type == "char***" && n == "argv")) {
      x.arg = "nullptr";  // MPI_INIT and MPI_INIT_THREAD have no command line in Fortran
    } else if (p.type == "int" && !p.array) {
      x.decl = "MPI_Fint* " + n;
      x.arg = "*" + n;
    } else if (p.type == "MPI_Aint" && !p.array) {
      x.decl = "MPI_Aint* " + n;
      x.arg = "*" + n;
    } else if (p.type == "int*" && n == "flag") {
      x.decl = "MPI_Fint* " + n;
      x.pre = "int " + c + " = 0;";
      x.arg = "&" + c;
      x.post = "*" + n + " = fortran::logical(" + c + ");";
    } else if (p.type == "int*" && n == "index") {
      x.decl = "MPI_Fint* " + n;
      x.pre = "int " + c + " = MPI_UNDEFINED;";
      x.arg = "&" + c;
      x.post = "*" + n + " = fortran::index_c2f(" + c + ");";
    } else if (p.type == "int*") {
      x.decl = "MPI_Fint* " + n;
      x.arg = n;
    } else if (p.type == "int" && p.array && n == "indices") {
      const Param* outcount = find(ps, "outcount");
      if (outcount == nullptr) {
        e.why_not = "indices without outcount";
        return e;
      }
      x.decl = "MPI_Fint* " + n;
      x.arg = n;
      x.multi = "for (int i = 0; *" + outcount->name + " != MPI_UNDEFINED && i < *" +
                outcount->name + "; ++i) " + n + "[i] = fortran::index_c2f(" + n + "[i]);";
    } else if ((p.type == "int" || p.type == "const int") && p.array) {
      x.decl = "MPI_Fint* " + n;
      x.arg = n;
    } else if ((p.type == "MPI_Aint" || p.type == "const MPI_Aint") && p.array) {
      x.decl = "MPI_Aint* " + n;
      x.arg = n;
    } else if (p.type == "MPI_Status*" && !p.array) {
      x.decl = "MPI_Fint* " + n;
      x.pre = "fortran::Status " + c + "(" + n + ");";
      x.arg = c + ".c()";
      x.post = c + ".back();";
    } else if (p.type == "MPI_Status" && p.array) {
      if (n_expr.empty()) {
        e.why_not = "statuses without a count";
        return e;
      }
      x.decl = "MPI_Fint* " + n;
      x.pre = "fortran::Statuses " + c + "(" + n + ", " + n_expr + ");";
      x.arg = c + ".c()";
      x.post = c + ".back();";
    } else if (handle_kind(p.type, &kind) && !p.array) {
      x.decl = "MPI_Fint* " + n;
      x.arg = f2c(kind, "*" + n);
    } else if (p.type.back() == '*' && handle_kind(p.type.substr(0, p.type.size() - 1), &kind) &&
               !p.array) {
      const std::string ctype = p.type.substr(0, p.type.size() - 1);
      x.decl = "MPI_Fint* " + n;
      x.pre = ctype + " " + c + " = " + f2c(kind, "*" + n) + ";";
      x.arg = "&" + c;
      x.ok = "*" + n + " = " + c2f(kind, c, "*" + n) + ";";
    } else if (handle_kind(p.type, &kind) && p.array) {
      std::string len;
      if (kind == "Type" && comm != nullptr && (n == "sendtypes" || n == "recvtypes")) {
        len = "fortran::types_count(MPI_Comm_f2c(*" + comm->name + "), " +
              (name.find("eighbor") != std::string::npos ? "true" : "false") + ", " +
              (n == "sendtypes" ? "true" : "false") + ")";
      } else if (kind == "Request" && !n_expr.empty()) {
        len = n_expr;
      } else {
        e.why_not = "array " + n + " of unknown length";
        return e;
      }
      std::string ctype = p.type;
      if (ctype.rfind("const ", 0) == 0) ctype = ctype.substr(6);
      x.decl = "MPI_Fint* " + n;
      x.pre = "fortran::Array<" + ctype + "> " + c + "(" + len + ");\n    for (int i = 0; i < " +
              c + ".size(); ++i) " + c + "[i] = " + f2c(kind, n + "[i]") + ";";
      x.arg = c + ".data()";
      if (p.type.rfind("const ", 0) != 0)
        x.multi = "for (int i = 0; i < " + c + ".size(); ++i) " + n + "[i] = " +
                  c2f(kind, c + "[i]", n + "[i]") + ";";
    } else {
      e.why_not = "parameter '" + p.type + " " + n + (p.array ? "[]" : "") + "'";
      return e;
    }
    e.pieces.push_back(x);
  }
  return e;
}

}  // namespace

int main() {
  std::printf(
      "// Generated by src/interpose/fortran_gen.cc from src/interpose/mpi_calls.def: do not edit.\n"
      "// The Fortran entry points (src/interpose/fortran.h says what they convert).\n"
      "#include <mpi.h>\n\n"
      "#include \"src/interpose/calls.h\"\n"
      "#include \"src/interpose/fortran.h\"\n\n"
      "#if MPIZIP_FORTRAN_ENTRIES\n"
      "#define MPIZIP_EXPORT __attribute__((visibility(\"default\")))\n"
      "using namespace ::mpizip::interpose;\n\n");
  int made = 0;
  std::string skipped;
  for (const Row& row : kRows) {
    const Entry e = classify(row);
    const std::string lo = lower(row.name), up = upper(row.name);
    if (!e.why_not.empty()) {
      std::fprintf(stderr, "fortran_gen: MPI_%s: no Fortran entry point (%s)\n", row.name,
                   e.why_not.c_str());
      skipped += std::string(skipped.empty() ? "" : " ") + "MPI_" + row.name;
      continue;
    }
    ++made;
    std::string decls, types, fargs, cargs, pre, post, ok, multi;
    for (const Piece& x : e.pieces) {
      if (!x.decl.empty()) {
        decls += x.decl + ", ";
        types += x.decl.substr(0, x.decl.rfind(' ')) + ", ";
        fargs += x.decl.substr(x.decl.rfind(' ') + 1) + ", ";
      }
      cargs += (cargs.empty() ? "" : ", ") + x.arg;
      if (!x.pre.empty()) pre += "    " + x.pre + "\n";
      if (!x.post.empty()) post += "    " + x.post + "\n";
      if (!x.ok.empty()) ok += "      " + x.ok + "\n";
      if (!x.multi.empty()) multi += "      " + x.multi + "\n";
    }
    const std::string sig = "(" + decls + "MPI_Fint* ierror)";
    // MPICH's mpi_f08 reaches the C entry points for the calls with a buffer (fortran.h).
    if (e.buffer) std::printf("#if MPIZIP_FORTRAN_F77\n");
    std::printf("// MPI_%s%s\n", row.name, row.params);
    std::printf("extern \"C\" MPIZIP_EXPORT void MPIZIP_FORTRAN_PRIMARY(mpi_%s_, mpi_%s_f08_)%s {\n",
                lo.c_str(), lo.c_str(), sig.c_str());
    if (!row.always) {
      // Where MPIZip has nothing to do, the library's own Fortran entry point, untouched.
      std::printf(
          "  if (::mpizip::core::bypass()) [[likely]] {\n"
          "    static const fortran::LibraryEntry library(\"%s\", \"%s\");\n"
          "    if (auto* own = library.get<void(%sMPI_Fint*)>()) {\n"
          "      MPI_Fint rc = MPI_SUCCESS;\n"
          "      own(%s&rc);\n"
          "      fortran::set_error(ierror, rc);\n"
          "      return;\n"
          "    }\n"
          "  }\n",
          lo.c_str(), up.c_str(), types.c_str(), fargs.c_str());
    }
    std::printf("  {\n%s    const int rc = call_%s(%s);\n%s", pre.c_str(), row.name, cargs.c_str(),
                post.c_str());
    if (!ok.empty()) std::printf("    if (rc == MPI_SUCCESS) {\n%s    }\n", ok.c_str());
    if (!multi.empty())
      std::printf("    if (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) {\n%s    }\n", multi.c_str());
    std::printf("    fortran::set_error(ierror, rc);\n  }\n}\n");
    std::printf("#if MPIZIP_FORTRAN_F77\n");
    for (const std::string& alias : {"mpi_" + lo + "__", "mpi_" + lo, "MPI_" + up})
      std::printf("extern \"C\" MPIZIP_EXPORT void %s%s __attribute__((alias(\"mpi_%s_\")));\n",
                  alias.c_str(), sig.c_str(), lo.c_str());
    std::printf("#if MPIZIP_FORTRAN_F08\n"
                "extern \"C\" MPIZIP_EXPORT void mpi_%s_f08_%s __attribute__((alias(\"mpi_%s_\")));\n"
                "#endif\n"
                "#endif\n",
                lo.c_str(), sig.c_str(), lo.c_str());
    if (e.buffer) std::printf("#endif  // MPIZIP_FORTRAN_F77\n");
    std::printf("\n");
  }
  std::printf("#endif  // MPIZIP_FORTRAN_ENTRIES\n\n"
              "// %d rows of mpi_calls.def have Fortran entry points; without: %s\n",
              made, skipped.empty() ? "none" : skipped.c_str());
  return 0;
}
