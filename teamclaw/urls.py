"""URL map: pages, the REST API under /api/v1/ (with OpenAPI schema and docs) and admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from teamclaw.api_docs import ApiDocsView
from teamclaw.favicon import favicon

urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(template_name="login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include("web.api_urls")),
    path("", include("web.urls")),
]

handler400 = "teamclaw.error_views.bad_request"
handler403 = "teamclaw.error_views.permission_denied"
handler404 = "teamclaw.error_views.page_not_found"
handler500 = "teamclaw.error_views.server_error"
