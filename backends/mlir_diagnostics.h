// What both backends keep of MLIR's diagnostics: one string ("loc: message; ..."), for the
// messages of the errors they return.
#pragma once

#include <string>

#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

namespace graphjit {

class MlirDiagnostics {
 public:
  explicit MlirDiagnostics(mlir::MLIRContext* context)
      : handler_(context, [this](mlir::Diagnostic& d) {
          llvm::raw_string_ostream os(text_);
          os << (text_.empty() ? "" : "; ") << d.getLocation() << ": " << d.str();
          return mlir::success();
        }) {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  mlir::ScopedDiagnosticHandler handler_;
};

}  // namespace graphjit
