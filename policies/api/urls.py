"""Routes of the policy lifecycle API, included under ``/api/v1/`` by ``uns_project/urls.py``."""
from django.urls import path

from policies.governance import api as governance

from . import views

_VERSION = "policies/<str:policy_id>/versions/<int:version>"

urlpatterns = [
    path("policies", views.PolicyCollectionView.as_view(), name="policy-collection"),
    path("policies/simulate", views.SimulateView.as_view(), name="policy-simulate"),
    path("policies/revisions", views.RevisionListView.as_view(), name="policy-revisions"),
    path(_VERSION, views.PolicyVersionView.as_view(), name="policy-version"),
    path(f"{_VERSION}/activate", views.ActivateView.as_view(), name="policy-activate"),
    path(f"{_VERSION}/retire", views.RetireView.as_view(), name="policy-retire"),
    path(f"{_VERSION}/clone", views.CloneView.as_view(), name="policy-clone"),
    path("governance/decisions", governance.DecisionCollectionView.as_view(), name="governance-decisions"),
    path("governance/simulate", governance.DecisionSimulateView.as_view(), name="governance-simulate"),
    path("governance/decisions/<str:decision_id>", governance.DecisionDetailView.as_view(),
         name="governance-decision"),
]
