"""The baseline the benchmark compares against: the minimal transform a contributor would
write with LibCST's own codemod framework (label every test class GENERIC, add the import
with AddImportsVisitor), run by `python -m libcst.tool codemod -x --no-format`.

It is deliberately naive (no classification rules): it measures the framework's cost.
"""

import libcst as cst
from libcst.codemod import VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor


class AddHwLabel(VisitorBasedCodemodCommand):
    DESCRIPTION = "Add hw_classification = HardwareClassification.GENERIC to test classes."

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        body = updated_node.body
        if not isinstance(body, cst.IndentedBlock):
            return updated_node
        has_tests = any(isinstance(s, cst.FunctionDef) and s.name.value.startswith("test_") for s in body.body)
        labelled = any(
            isinstance(s, cst.SimpleStatementLine)
            and any(
                isinstance(x, cst.Assign)
                and any(isinstance(t.target, cst.Name) and t.target.value == "hw_classification" for t in x.targets)
                for x in s.body
            )
            for s in body.body
        )
        if not has_tests or labelled:
            return updated_node
        AddImportsVisitor.add_needed_import(self.context, "torch.testing._internal.common_utils", "HardwareClassification")
        label = cst.parse_statement("hw_classification = HardwareClassification.GENERIC\n")
        return updated_node.with_changes(body=body.with_changes(body=[label, *body.body]))
