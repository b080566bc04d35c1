from django.urls import path

from capabilities import views

urlpatterns = [
    path("roles/", views.role_list, name="roles"),
    path("roles/<str:role>/", views.role_detail, name="role-detail"),
    path("capabilities/", views.capability_list, name="capabilities"),
    path("capabilities/<str:capability_id>/", views.capability_detail, name="capability-detail"),
]
