"""A test-only URLconf with views that fail in each way the API error contract covers."""

from django.urls import path
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from connector_api.permissions import TokenHasRequiredScopes
from core.errors import ApiError


class _Input(serializers.Serializer):
    email = serializers.EmailField()
    delay_hours = serializers.IntegerField(min_value=0)


class ValidateView(APIView):
    permission_classes = [AllowAny]

    def post(self, request):
        _Input(data=request.data).is_valid(raise_exception=True)
        return Response({"ok": True})


class WriteScopeView(APIView):
    permission_classes = [TokenHasRequiredScopes]
    required_scopes = ["write"]

    def post(self, request):
        return Response({"ok": True})


class ConflictView(APIView):
    permission_classes = [AllowAny]

    def get(self, request):
        raise ApiError(409, "idempotency_in_progress", "Still running.", retry_after=5)


class CrashView(APIView):
    """An unexpected error whose message and local variables hold personal data."""

    permission_classes = [AllowAny]

    def post(self, request):
        contact = request.data
        raise RuntimeError(f"could not reach {contact['email']} or {contact['phone']}")


urlpatterns = [
    path("api/crash", CrashView.as_view()),
    path("api/validate", ValidateView.as_view()),
    path("api/write", WriteScopeView.as_view()),
    path("api/conflict", ConflictView.as_view()),
]
