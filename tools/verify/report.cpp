// Printing: the findings in the compiler's error format, then a short inventory per model.
//
// Findings come first, one per line as `file:line:col: error: [rule] message`, so editors and
// CI logs link them to the source; the same node can be seen from several translation units
// and several paths, so they are sorted and reduced to one per position and rule. The
// inventory that follows is the positive half of the proof: what one forward pass does (library
// calls and kernel launches of the straight line), what construction builds, and the memory
// the header declares, so a reviewer sees at a glance that the numbers match the model.
#include <algorithm>
#include <sstream>
#include <tuple>

#include "verify.h"

namespace zoc_verify {

namespace {

int64_t total(const Counts& counts) {
  int64_t n = 0;
  for (const auto& entry : counts) n += entry.second;
  return n;
}

// "cudnnPoolingForward 2, cublasGemmEx 1": the most frequent first, then by name.
std::string listing(const Counts& counts) {
  std::vector<std::pair<std::string, int64_t>> items(counts.begin(), counts.end());
  std::stable_sort(items.begin(), items.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [name, n] : items) {
    text += (text.empty() ? "" : ", ") + name + " " + std::to_string(n);
  }
  return text;
}

// "58 library calls (cudnnConvolutionBiasActivationForward 53, ...)", or "0 kernel launches".
std::string counted(const Counts& counts, const char* noun) {
  const std::string text = std::to_string(total(counts)) + " " + noun;
  return counts.empty() ? text : text + " (" + listing(counts) + ")";
}

bool is_descriptor_creation(const std::string& name) {
  return (name.rfind("cudnnCreate", 0) == 0 && name.size() > 10 &&
          name.compare(name.size() - 10, 10, "Descriptor") == 0) ||
         name == "cudnnBackendCreateDescriptor";
}

}  // namespace

void finish(Report* report) {
  std::vector<Finding>& f = report->findings;
  // Stable: of several findings at one position (a call and the temporaries it makes), the
  // first one seen, the outermost, is kept.
  std::stable_sort(f.begin(), f.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.file, a.line, a.col, a.rule) < std::tie(b.file, b.line, b.col, b.rule);
  });
  f.erase(std::unique(f.begin(), f.end(),
                      [](const Finding& a, const Finding& b) {
                        return a.file == b.file && a.line == b.line && a.col == b.col &&
                               a.rule == b.rule;
                      }),
          f.end());
  for (Inventory& inventory : report->models) {
    // In the order the walk met them (source order within a function), each once.
    std::vector<OneTime> once;
    for (const OneTime& item : inventory.one_time) {
      const bool seen = std::any_of(once.begin(), once.end(), [&](const OneTime& o) {
        return o.where == item.where && o.what == item.what;
      });
      if (!seen) once.push_back(item);
    }
    inventory.one_time = std::move(once);
  }
}

std::string format_report(const Report& report, const std::string& target) {
  std::ostringstream out;
  for (const Finding& f : report.findings) {
    out << f.file << ":" << f.line << ":" << f.col << ": error: [" << f.rule << "] " << f.message
        << "\n";
  }
  for (const Inventory& inv : report.models) {
    out << "inventory of " << inv.model << ":\n";
    out << "  forward reaches " << inv.reached.size() << " generated functions:";
    for (const std::string& name : inv.reached) out << " " << name;
    out << "\n";
    out << "  per forward pass (" << inv.straight_line
        << "): " << counted(inv.library_calls, "library calls") << ", "
        << counted(inv.kernel_launches, "kernel launches") << "\n";
    out << "  static arena: ";
    if (inv.has_arena) {
      out << inv.arena_bytes_per_sample << " bytes per sample (kArenaBytesPerSample, times "
          << "max_batch)";
    } else {
      out << "not declared";
    }
    out << "; weights: ";
    if (inv.has_weights) {
      out << inv.weight_bytes << " bytes (kWeightBytes)\n";
    } else {
      out << "not declared\n";
    }
    Counts descriptors;
    for (const auto& [name, n] : inv.created) {
      if (is_descriptor_creation(name)) descriptors[name] = n;
    }
    out << "  at construction (create): " << counted(inv.bundles, "descriptor bundles") << ", "
        << total(descriptors) << " cuDNN descriptors; " << counted(inv.created, "creation calls")
        << "\n";
    out << "  one-time (`// zoc-verify: one-time`): ";
    if (inv.one_time.empty()) out << "none";
    for (size_t i = 0; i < inv.one_time.size(); ++i) {
      out << (i ? ", " : "") << inv.one_time[i].what << " at " << inv.one_time[i].where;
    }
    out << "\n";
    if (!inv.one_time_external.empty()) {
      out << "  one-time calls outside generated code and the C APIs: "
          << inv.one_time_external.size() << " functions (";
      size_t i = 0;
      for (const std::string& name : inv.one_time_external) {
        if (i == 4) {
          out << ", ...";
          break;
        }
        out << (i++ ? ", " : "") << name;
      }
      out << ")\n";
    }
  }
  out << "zoc-verify: " << target << ": ";
  if (report.findings.empty()) {
    out << "no findings\n";
  } else {
    out << report.findings.size() << (report.findings.size() == 1 ? " finding\n" : " findings\n");
  }
  return out.str();
}

}  // namespace zoc_verify
