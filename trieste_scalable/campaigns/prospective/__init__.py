"""A prospective campaign, the lab in the loop (:class:`.campaign.ProspectiveCampaign`):
``propose`` writes a batch file, ``tell`` reads it back (:mod:`.batch_file`, :mod:`.tell`), over
the directory's records (:mod:`.files`), a model rebuilt as ``screen`` built it (:mod:`.model`)
and a report (:mod:`.report`)."""

from .campaign import ProposedBatch, ProspectiveCampaign

__all__ = ["ProposedBatch", "ProspectiveCampaign"]
