; Inno Setup script: a per-user Windows installer for the PyInstaller folder.
;
;   .venv\Scripts\pyinstaller build.spec --noconfirm
;   iscc /DAppVersion=0.1.0 packaging\windows\fathom.iss
;
; Produces dist\fathom-<version>-setup.exe. Installs into
; %LOCALAPPDATA%\Programs\Fathom without administrator rights, adds a Start menu
; entry and an uninstaller, and registers no file associations. The user's
; library and settings (under %APPDATA% / %LOCALAPPDATA%\Fathom) are kept on uninstall.

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif

[Setup]
AppId={{6F1C2E8A-3B7D-4E55-9A61-0F3C7B2D9E14}
AppName=Fathom
AppVersion={#AppVersion}
AppVerName=Fathom {#AppVersion}
AppPublisher=Fathom developers
PrivilegesRequired=lowest
DefaultDirName={autopf}\Fathom
DefaultGroupName=Fathom
DisableProgramGroupPage=yes
ChangesAssociations=no
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
SetupIconFile=fathom.ico
UninstallDisplayIcon={app}\fathomw.exe
UninstallDisplayName=Fathom
OutputDir=..\..\dist
OutputBaseFilename=fathom-{#AppVersion}-setup
Compression=lzma2
SolidCompression=yes
WizardStyle=modern

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "..\..\dist\fathom\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Fathom"; Filename: "{app}\fathomw.exe"; Comment: "Deep research over your own documents, offline"
Name: "{autodesktop}\Fathom"; Filename: "{app}\fathomw.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\fathomw.exe"; Description: "{cm:LaunchProgram,Fathom}"; Flags: nowait postinstall skipifsilent
