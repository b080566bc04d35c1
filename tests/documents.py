"""Requirement documents used as test input."""

BOOKSTORE = open(__file__.replace("tests/documents.py", "runs/samples/online_bookstore.md"), encoding="utf-8").read()

CLINIC = """# 诊所预约系统 (Clinic booking)

## 目标
Reduce no-shows at our three clinics by 20% within six months.

## Users
- Patients booking an appointment
- Receptionists managing the day's schedule

## Acceptance criteria
- A patient can book, move and cancel an appointment online.

## Requirements
- Patients must book an appointment with a doctor in under 2 minutes.
- Patients store their date of birth and phone number in their profile.
- A reminder SMS is sent every day at 18:00 for the next day's appointments.
- The schedule view must be intuitive.
- Receptionists see the EMR summary of a patient when they open an appointment.
"""

PLAIN_TOOL = """# Internal CLI for log rotation

## Goal
Keep disk usage under 80% on build servers, so builds stop failing for lack of space.

## Users
Build engineers.

## Requirements
- The tool must rotate logs older than 7 days.
- The tool must keep at most 20 GB of logs per server.
- If rotation fails, the tool must log the error and exit with status 1.

## Acceptance criteria
- Running the tool on a server with 30 GB of old logs leaves at most 20 GB.
"""
