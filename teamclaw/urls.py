"""URL map: pages, the language switcher and the scripts' translation catalog, the REST API
under /api/v1/ (with OpenAPI schema and docs) and admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView

from teamclaw.api_docs import ApiDocsView
from teamclaw.favicon import favicon
from web.language import set_language_saved
from web.pages.login import LoginPage

urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("login/", LoginPage.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # The language switcher posts here (the login page has it too; a signed-in user's choice
    # is saved on the user, web.language); the catalog of the static scripts' strings
    # (docs/architecture.md "Translations").
    path("i18n/setlang/", set_language_saved, name="set_language"),
    path("i18n/js/", login_not_required(JavaScriptCatalog.as_view()), name="javascript-catalog"),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/v1/docs/", ApiDocsView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/v1/", include("web.api_urls")),
    path("", include("web.urls")),
]

handler400 = "teamclaw.error_views.bad_request"
handler403 = "teamclaw.error_views.permission_denied"
handler404 = "teamclaw.error_views.page_not_found"
handler500 = "teamclaw.error_views.server_error"
