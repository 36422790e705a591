"""pfNames VF ranges and unselected-interface reasons: the policy rules' (`sriovop.policyrules.pfselection`)."""

from sriovop.policyrules.pfselection import NO_RANGE, PfName, explain_mismatch, parse_pf_name, ranges_overlap

__all__ = ["NO_RANGE", "PfName", "explain_mismatch", "parse_pf_name", "ranges_overlap"]
